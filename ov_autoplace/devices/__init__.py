"""Devices: device strings and what a call's device argument and config mean, virtual devices, the testbed, what devices report about themselves, the native latency timer.

The lowest room beside ``graph``: it imports nothing of ov_autoplace above ``errors``."""
