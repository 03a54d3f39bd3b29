from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        """Connect to the runs app's own signals (see ``runs.receivers``)."""
        from runs.receivers import pump_queue_when_a_run_ends
        from runs.signals import state_changed

        state_changed.connect(pump_queue_when_a_run_ends, dispatch_uid="runs.pump_queue_when_a_run_ends")
