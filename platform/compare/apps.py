from django.apps import AppConfig


class CompareConfig(AppConfig):
    name = "compare"

    def ready(self) -> None:
        """Connect to the runs app's signals (see ``compare.receivers``)."""
        from compare.receivers import warm_caches_of_finished_run
        from runs.signals import state_changed

        state_changed.connect(warm_caches_of_finished_run, dispatch_uid="compare.warm_caches_of_finished_run")
