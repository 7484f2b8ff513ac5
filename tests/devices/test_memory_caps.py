"""``memory_caps=`` read at the door (devices/memory_caps.py): sizes with units, and every malformed cap a
PropertyError naming the value and what would be accepted."""

from __future__ import annotations

import pytest

from ov_autoplace.devices.memory_caps import format_bytes, parse_cap_option, parse_memory_caps, parse_size
from ov_autoplace.errors import PropertyError


@pytest.mark.parametrize("text, expected", [
    (3_000_000_000, 3_000_000_000), ("2 GB", 2 * 10**9), ("2GB", 2 * 10**9), ("2gb", 2 * 10**9),
    ("1.5 GiB", int(1.5 * 2**30)), ("512 MiB", 512 * 2**20), ("64KiB", 65536), ("10 KB", 10_000), ("4096", 4096),
    ("4096 B", 4096), (" 7 mb ", 7 * 10**6),
])
def test_sizes_with_decimal_and_binary_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["2 GX", "two GB", "GB", "", "-1 GB", "1e9", 0, -5, 1.5e9, True, None, [1]])
def test_a_malformed_size_is_a_property_error_naming_it(bad):
    with pytest.raises(PropertyError, match="memory cap|size"):
        parse_size(bad)


def test_caps_are_a_read_only_mapping_of_bytes():
    caps = parse_memory_caps({"CPU": "2 GB", "CPUF": 3_000_000_000}, ("CPU", "CPUF"))
    assert dict(caps) == {"CPU": 2 * 10**9, "CPUF": 3 * 10**9}
    with pytest.raises(TypeError):
        caps["CPU"] = 1  # type: ignore[index]
    assert dict(parse_memory_caps(None, ("CPU",))) == {}


def test_a_cap_on_a_device_not_in_the_string_names_the_devices():
    with pytest.raises(PropertyError, match=r"'GPU'.*\['CPU', 'CPUF'\]"):
        parse_memory_caps({"GPU": "1 GB"}, ("CPU", "CPUF"))


def test_caps_must_be_a_mapping():
    with pytest.raises(PropertyError, match="mapping device -> size"):
        parse_memory_caps(["CPU=1GB"], ("CPU",))


def test_the_cli_option_reads_device_equals_size():
    assert parse_cap_option("CPU=2GB") == ("CPU", 2 * 10**9)
    with pytest.raises(PropertyError, match="DEVICE=SIZE"):
        parse_cap_option("2GB")


def test_bytes_are_formatted_with_their_exact_count():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1_500_000) == "1.5 MB (1500000 B)"
