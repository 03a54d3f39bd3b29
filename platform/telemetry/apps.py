from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "telemetry"

    def ready(self) -> None:
        """Connect to the runs app's signals (see ``telemetry.receivers``)."""
        from runs.signals import log_updated, state_changed
        from telemetry.receivers import push_log_to_dashboards, push_state_to_dashboards

        state_changed.connect(push_state_to_dashboards, dispatch_uid="telemetry.push_state_to_dashboards")
        log_updated.connect(push_log_to_dashboards, dispatch_uid="telemetry.push_log_to_dashboards")
