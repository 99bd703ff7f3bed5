"""How a failed write is told apart as a full disk (the fault test in tests/faults/test_disk_full.py fills a real
one): the writers' own words for it, and torch's opaque stream error only where the disk has no room left."""

import errno

from tunelab.training.write_failures import disk_full_reason, is_disk_full, remove_incomplete_checkpoints


def test_no_space_is_recognised_through_the_exception_chain_and_in_the_writers_words(tmp_path):
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("saving the optimizer failed") from inner
    except RuntimeError as outer:
        assert is_disk_full(outer, tmp_path)
    safetensors = Exception('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
                            'left on device" })')
    assert is_disk_full(safetensors, tmp_path)


def test_an_opaque_stream_error_on_a_disk_with_room_is_not_called_a_full_disk(tmp_path):
    assert not is_disk_full(RuntimeError("basic_ios::clear: iostream error"), tmp_path)
    assert not is_disk_full(ValueError("a bad learning rate"), tmp_path)


def test_only_half_written_checkpoints_are_removed_and_the_reason_names_the_last_one_relatively(tmp_path):
    complete, partial = tmp_path / "checkpoints" / "checkpoint-2", tmp_path / "checkpoints" / "checkpoint-4"
    complete.mkdir(parents=True)
    (complete / "trainer_state.json").write_text("{}")
    partial.mkdir()
    (partial / "adapter_model.safetensors").write_bytes(b"\0" * 10)

    removed = remove_incomplete_checkpoints(tmp_path)

    assert removed == ["checkpoints/checkpoint-4"] and complete.is_dir() and not partial.exists()
    reason = disk_full_reason(tmp_path, removed)
    assert "no space left on device while writing checkpoints/checkpoint-4" in reason and str(tmp_path) not in reason
