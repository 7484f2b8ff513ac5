"""read_json_file: every damage of a JSON file is one typed error naming the file."""

from __future__ import annotations

import json

import pytest

from ov_autoplace.errors import FileFormatError
from ov_autoplace.model.loading import read_json_file
from tests.damaged_files import JSON_DAMAGES, damage_json


def _parse(data):
    return int(data["value"]), list(data["other"])


@pytest.mark.parametrize("kind", sorted(JSON_DAMAGES) + ["directory"])
def test_every_damage_is_a_file_format_error(tmp_path, kind):
    path = tmp_path / "thing.json"
    path.write_text(json.dumps({"value": 3, "other": [1, 2]}))
    assert read_json_file(path, "thing", _parse) == (3, [1, 2])
    damage_json(path, kind)
    with pytest.raises(FileFormatError) as info:
        read_json_file(path, "thing", _parse)
    assert str(path) in str(info.value) and "thing" in str(info.value)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no thing file"):
        read_json_file(tmp_path / "absent.json", "thing", _parse)
