"""Rewards for responses."""
