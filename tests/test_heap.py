"""rag_bench.heap: the collector tuned for a batch and put back (issue 57)."""

import gc

from rag_bench import heap


def test_a_tuned_block_freezes_what_exists_raises_the_young_threshold_and_puts_both_back():
    before = gc.get_threshold(), gc.get_freeze_count()
    with heap.tuned():
        assert gc.get_freeze_count() > before[1]
        assert gc.get_threshold()[0] >= heap.YOUNG_THRESHOLD and gc.get_threshold()[1:] == before[0][1:]
        assert gc.isenabled()
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_what_the_first_cell_loaded_is_frozen_too_and_put_back_with_the_rest():
    before = gc.get_freeze_count()
    with heap.tuned():
        frozen = gc.get_freeze_count()
        loaded = [[i] for i in range(2_000)]  # what a first cell leaves loaded
        heap.freeze_loaded()
        assert gc.get_freeze_count() >= frozen + len(loaded)
    assert gc.get_freeze_count() == before
    heap.freeze_loaded()  # outside a block: nothing is frozen
    assert gc.get_freeze_count() == before


def test_a_block_inside_another_leaves_the_outer_blocks_tuning_in_place():
    before = gc.get_threshold(), gc.get_freeze_count()
    with heap.tuned():
        outer = gc.get_threshold(), gc.get_freeze_count()
        with heap.tuned():  # e.g. a closing report inside a launcher's batch
            pass
        assert (gc.get_threshold(), gc.get_freeze_count()) == outer  # not unfrozen by the inner block
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_the_collector_is_put_back_when_the_block_raises():
    before = gc.get_threshold(), gc.get_freeze_count()
    try:
        with heap.tuned():
            raise RuntimeError("a failing batch")
    except RuntimeError:
        pass
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    with heap.tuned():  # and the next block tunes it again
        assert gc.get_freeze_count() > before[1]
