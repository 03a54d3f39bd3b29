"""Template tags of the telemetry app."""
