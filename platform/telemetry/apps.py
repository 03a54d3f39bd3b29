from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "telemetry"

    def ready(self) -> None:
        """Connect to the runs app's signals (see ``telemetry.receivers``)."""
        from runs.signals import state_changed
        from telemetry.receivers import push_state_to_dashboards

        state_changed.connect(push_state_to_dashboards, dispatch_uid="telemetry.push_state_to_dashboards")
