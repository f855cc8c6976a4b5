import pytest

from iniconf import InterpolationError, interpolate, loads


def test_same_section_reference():
    config = interpolate(loads("[s]\nhost = example.org\nurl = https://${host}/\n"))
    assert config["s"]["url"] == "https://example.org/"


def test_other_section_reference():
    config = interpolate(loads("[a]\nx = 1\n[b]\ny = ${a:x}2\n"))
    assert config["b"]["y"] == "12"


def test_default_section_reference():
    config = interpolate(loads("root = /srv\n[app]\ndata = ${root}/data\n"))
    assert config["app"]["data"] == "/srv/data"


def test_nested_references():
    config = interpolate(loads("[s]\na = x\nb = ${a}y\nc = ${b}z\n"))
    assert config["s"]["c"] == "xyz"


def test_undefined_reference():
    with pytest.raises(InterpolationError, match="not defined"):
        interpolate(loads("[s]\na = ${missing}\n"))
