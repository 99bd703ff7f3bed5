"""Each folder of tests is a tier marker (tests/conftest.py), so `make test-fast` (`pytest -m unit`) and one tier at a
time (`pytest -m api`) select by what a test needs."""

from tests.conftest import TESTS_DIR, TIERS


def test_a_unit_test_is_marked_unit_and_not_slow(request):
    assert request.node.get_closest_marker("unit") is not None
    assert request.node.get_closest_marker("slow") is None


def test_every_folder_of_tests_is_a_tier():
    folders = {path.parent.relative_to(TESTS_DIR).parts[0] for path in TESTS_DIR.rglob("test_*.py")}
    assert folders == set(TIERS)
