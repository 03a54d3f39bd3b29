"""Fixtures of the platform tier."""
import pytest


@pytest.fixture
def fast_password_hashing(settings):
    """Salted MD5 instead of PBKDF2 (about 0.4 s a hash here), for tests that send hundreds
    of logins in which hashing is incidental: the fuzzed token login, the login throttle.
    The tests of how passwords are hashed (test_security.py) keep the real settings."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
