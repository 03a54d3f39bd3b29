#!/usr/bin/env python
"""Django's command-line utility; puts platform/ and workers/ on sys.path first."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent

if __name__ == "__main__":
    sys.path[:0] = [str(ROOT / "platform"), str(ROOT / "workers")]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "umbra_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
