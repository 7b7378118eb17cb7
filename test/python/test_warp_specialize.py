"""warp-specialize (compile option warp_specialize=True, with tma=True): the thread-stage IR of a TMA-fed wgmma
GEMM split into a producer warpgroup (ids >= threads, one elected thread issuing every box, each reused slot after
its `empty` wait) and the user's threads consuming (the full wait, the wgmma, the release after the wgmma_wait that
retires it); the option's checks; the CPU simulation of the split launch (its roles in step, simulate/roles.py)
against the unsplit kernel and with injected synchronization bugs; setmaxnreg's register plan."""

import re

import ml_dtypes
import numpy as np
import pytest

from support import static_gemm
from tilemlir import driver
from tilemlir.backends.cpu.kernel import SimulationError
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import arith, ir
from tilemlir.passes import warp_specialize
from tilemlir.passes.warp_specialize import RegisterPlan, register_plan
from tilemlir.testing import relative_error
from tilemlir.runtime import cubin
from tilemlir.runtime.nvrtc import CompileOptions, ptxas_report

BF16 = ml_dtypes.bfloat16


def thread_ir(fn) -> str:
    module = fn.frontend().module()
    with module.context:
        texts, _ = driver.run_stages(module, "thread", instruction="wgmma", tma=True, warp_specialize=True)
    return texts["thread"]


@pytest.mark.parametrize("threads, stages", [(128, 3), (256, 4)])
def test_the_launch_gains_a_producer_warpgroup(threads, stages):
    block_m = 64 * threads // 128
    text = thread_ir(static_gemm(block_m, 64, 64, n=72, k=136, m=72, threads=threads, num_stages=stages))
    assert re.search(rf"threads\(.+\) in \(%\w+ = %c{threads + 128}\b", text)
    assert text.count(f"{{count = {threads // 32} : i64}}") == stages  # empty[s]: lane 0 of every consumer warp
    producer, consumer = text.split("} else {", 1)[0], text.split("} else {", 1)[1]
    assert re.search(rf"arith.cmpi eq, %\w+, %c{threads}\w* : index", producer)  # thread `threads` issues
    issue = producer[producer.index("scf.for"):]
    assert issue.index('"tile.mbarrier_wait"') < issue.index('"tile.tma_load"')  # empty wait, then the box
    assert '"tile.wgmma"' not in producer and '"tile.tma_load"' not in consumer
    assert "gpu.barrier" not in consumer
    wait = consumer.index('"tile.wgmma_wait"() {pending = 1')
    assert wait < consumer.index('"tile.mbarrier_arrive"') < consumer.index('"tile.wgmma_wait"() {pending = 0')


def test_warp_specialize_needs_tma():
    fn = static_gemm(64, 64, 64, n=64, k=64)
    with pytest.raises(CompileError, match=r"option warp_specialize=True needs tma=True"):
        fn.compile("cpu", level="thread", tensor_cores="wgmma", warp_specialize=True)
    with pytest.raises(CompileError, match=r"option warp_specialize for target 'cuda' must be True or False"):
        fn.compile("cuda", arch="sm_90a", tma=True, warp_specialize=1)
    with pytest.raises(CompileError, match=r"option tma=True needs arch sm_90a"):
        fn.compile("cuda", arch="sm_80", tma=True, warp_specialize=True)
    with pytest.raises(CompileError, match=r"option persistent needs warp_specialize=True"):
        fn.compile("cpu", level="thread", tensor_cores="wgmma", tma=True, persistent=True)
    for bad in (0, -3, 2.0, "132"):
        with pytest.raises(CompileError, match=r"option persistent for target 'cuda' must be True, False or a "
                                               r"positive number of blocks"):
            fn.compile("cuda", arch="sm_90a", tma=True, warp_specialize=True, persistent=bad)


def ws_and_plain(fn):
    options = dict(level="thread", tensor_cores="wgmma", tma=True)
    return fn.compile("cpu", warp_specialize=True, **options), fn.compile("cpu", **options)


def operands(rng, m, n, k):
    return (rng.standard_normal((m, k)).astype(BF16), rng.standard_normal((k, n)).astype(BF16))


@pytest.mark.parametrize("block_m, threads, stages, m, n, k", [
    (64, 128, 3, 72, 72, 520),  # one consumer warpgroup, every slot reused twice, ragged M and N
    (128, 256, 4, 130, 72, 200),  # two consumer warpgroups (setmaxnreg), K not a multiple of the tile
    (64, 128, 2, 64, 64, 704),  # two stages: no wgmma batch in flight, the slot released at the iteration's end
    (128, 256, 4, 130, 72, 520),  # two consumer warpgroups reusing slots: the producer sees both retire their reads
])
def test_the_simulation_runs_the_split_launch_as_the_unsplit_one(rng, block_m, threads, stages, m, n, k):
    """The CPU simulation runs the producer and the consumers in step (simulate/roles.py): bit for bit the result
    of the kernel without warp specialization, through every full and empty wait."""
    fn = static_gemm(block_m, 64, 64, n=n, k=k, m=m, threads=threads, num_stages=stages)
    ws, plain = ws_and_plain(fn)
    a, b = operands(rng, m, n, k)
    got = ws(a, b)
    assert np.array_equal(got, plain(a, b))
    assert relative_error(got, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5


@pytest.mark.parametrize("block_m, threads, stages, m, n, k, blocks", [
    (64, 128, 3, 200, 136, 520, 2),  # 4 x 3 tiles on 2 blocks, 6 each: slots reused within and across tiles, ragged M
    (128, 256, 4, 300, 72, 520, 2),  # two consumer warpgroups
    (64, 128, 2, 64, 136, 704, 3),  # two stages: no wgmma in flight, nothing left to release after the loop
    (64, 128, 3, 72, 72, 72, 5),  # one k tile a tile (fewer than the stages): the prologue waits on the last drain
])
def test_the_persistent_schedule_runs_as_the_unsplit_launch(rng, block_m, threads, stages, m, n, k, blocks):
    """persistent=N: N blocks walk the tiles, the roles' tile loops fused in step too (simulate/roles.py); bit for
    bit the kernel without warp specialization."""
    fn = static_gemm(block_m, 64, 64, n=n, k=k, m=m, threads=threads, num_stages=stages)
    options = dict(level="thread", tensor_cores="wgmma", tma=True)
    persistent = fn.compile("cpu", warp_specialize=True, persistent=blocks, **options)
    a, b = operands(rng, m, n, k)
    got = persistent(a, b)
    assert np.array_equal(got, fn.compile("cpu", **options)(a, b))
    assert relative_error(got, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5


def test_the_persistent_grid_is_the_tiles_or_the_sm_count():
    fn = static_gemm(128, 256, 64, n=1024, k=1040, m=72, threads=256, num_stages=4)
    kernel = fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True, warp_specialize=True, persistent=True)
    assert kernel.signature.grid == ("min((M + 127) // 128 * 4, 132)", "1", "1")
    loops = re.findall(r"for \(long long (\w+) = bx; \1 < (\w+); \1 \+= grid_x\)", kernel.cuda_source())
    assert len(loops) == 2  # the producer's and the consumers' tile loops
    few = fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True, warp_specialize=True, persistent=7)
    assert few.signature.grid[0] == "min((M + 127) // 128 * 4, 7)"


def persistent_without(monkeypatch, step: str):
    """The simulated persistent GEMM of 4 x 3 tiles on 2 blocks with warp-specialize's `step` left out."""
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    monkeypatch.setattr(warp_specialize._Split, step, lambda self, *args: None)
    fn = static_gemm(64, 64, 64, n=136, k=520, m=200, num_stages=3)
    return fn.compile("cpu", level="thread", tensor_cores="wgmma", tma=True, warp_specialize=True, persistent=2)


def test_the_persistent_consumers_drain_each_tile(rng, monkeypatch):
    """Without the release of a tile's last k tile after its wgmma_wait<0>, the producer's wait to refill that
    slot for the next tile never holds: a located deadlock in the simulation."""
    kernel = persistent_without(monkeypatch, "_drain")
    with pytest.raises(SimulationError, match=r"deadlock in block 0: thread 0 waits at .*support\.py:\d+:\d+ for the "
                                              r"phase of parity \d of mbarrier 'empty'"):
        kernel(*operands(rng, 200, 136, 520))


def test_persistent_rings_count_the_whole_schedule(rng, monkeypatch):
    """Slots and phases counted from each tile's first k tile (not the block's first): the second tile's consumers
    wait for the phase of full[0] that completed in the first tile, the producer meanwhile for a release that
    never comes; the simulation reports the deadlock."""
    kernel = persistent_without(monkeypatch, "_count_globally")
    with pytest.raises(SimulationError, match=r"deadlock in block 0: thread 0 waits at .*support\.py:\d+:\d+ for the "
                                              r"phase of parity 0 of mbarrier 'full'\[0\]"):
        kernel(*operands(rng, 200, 136, 520))


def test_a_slot_nobody_releases_is_a_deadlock(rng, monkeypatch):
    """An `empty` ring expecting one arrival more than the consumer warps make: the producer's wait for the first
    reused slot never holds, which the simulation reports with the wait's line instead of hanging."""
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    monkeypatch.setattr(warp_specialize._Split, "_arrivals", lambda self: self.threads // 32 + 1)
    fn = static_gemm(64, 64, 64, n=72, k=520, m=72, num_stages=3)
    kernel = fn.compile("cpu", level="thread", tensor_cores="wgmma", tma=True, warp_specialize=True)
    with pytest.raises(SimulationError, match=r"deadlock in block 0: thread 0 waits at .*support\.py:\d+:\d+ for the "
                                              r"phase of parity 0 of mbarrier 'empty'\[0\]"):
        kernel(*operands(rng, 72, 72, 520))


def test_a_producer_waiting_for_the_wrong_phase_is_a_deadlock(rng, monkeypatch):
    """The producer waiting for the phase in which the consumers release the tile it is about to load (parity
    j / S instead of j / S - 1): it waits for itself, and the consumers for a tile it never loads."""
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    real = warp_specialize.bulk_copy.mbarrier_wait

    def one_phase_late(barrier, slot, parity, *, loc, ip):
        with loc, ip:
            flipped = arith.subi(arith.constant(ir.IndexType.get(), 1), parity)
        return real(barrier, slot, flipped, loc=loc, ip=ip)

    monkeypatch.setattr(warp_specialize.bulk_copy, "mbarrier_wait", one_phase_late)
    fn = static_gemm(64, 64, 64, n=72, k=520, m=72, num_stages=3)
    kernel = fn.compile("cpu", level="thread", tensor_cores="wgmma", tma=True, warp_specialize=True)
    monkeypatch.setattr(warp_specialize.bulk_copy, "mbarrier_wait", real)
    with pytest.raises(SimulationError, match=r"deadlock in block 0: thread \d+ waits at .*support\.py:\d+:\d+ for the "
                                              r"phase of parity \d of mbarrier '(empty|full)'"):
        kernel(*operands(rng, 72, 72, 520))


def test_an_epilogue_through_shared_memory_syncs_the_consumers_alone(rng):
    """The barrier between the shared tile's writes and reads becomes named barrier 1 of the 128 consumers
    (bar.sync 1, 128: the producer warpgroup never reaches it); simulated, the kernel equals the unsplit one."""
    fn = static_gemm(64, 64, 64, n=72, k=520, m=72, shared_epilogue=True)
    ws, plain = ws_and_plain(fn)
    a, b = operands(rng, 72, 72, 520)
    assert np.array_equal(ws(a, b), plain(a, b))
    source = fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True, warp_specialize=True).cuda_source()
    consumer = source.split("} else {", 1)[1]
    assert consumer.count("tl_named_barrier<1, 128>();") == 1 and "__syncthreads" not in consumer
    assert 'asm volatile("bar.sync %0, %1;" :: "n"(ID), "n"(THREADS) : "memory");' in source


@pytest.mark.parametrize("consumers, plan", [
    (128, None),  # one consumer warpgroup already gets 255 registers
    (192, None),  # not whole warpgroups: setmaxnreg needs every warp of a warpgroup
    (256, RegisterPlan(168, 40, 232)),  # 65536 / 384 -> 168; 128 * 128 freed, 64 more for each of 256
    (384, RegisterPlan(128, 40, 152)),  # 88 * 128 freed: 29 more each, 24 in multiples of 8
    (512, RegisterPlan(96, 40, 104)),
])
def test_register_plan(consumers, plan):
    assert register_plan(consumers) == plan
    if plan is not None:  # what the block asks of its pool never exceeds what the producer gives back
        assert (plan.consumer - plan.entry) * consumers <= (plan.entry - plan.producer) * 128
        assert plan.entry * (consumers + 128) <= 65536


@pytest.fixture(scope="module")
def two_consumer_warpgroups():
    fn = static_gemm(128, 256, 64, n=1024, k=1040, m=72, threads=256, num_stages=3)
    return fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True, warp_specialize=True)


def test_two_consumer_warpgroups_rebalance_registers(two_consumer_warpgroups):
    """The producer warpgroup lowers its maximum first thing, the consumers raise theirs, and ptxas starts every
    thread at the launch bound's share (which the plan assumed) without ignoring setmaxnreg."""
    source = two_consumer_warpgroups.cuda_source()
    producer, consumer = source.split("} else {", 1)
    assert re.search(r"if \(tx >= 256\) \{\n\s+tl_setmaxnreg_dec<40>\(\);", producer)
    first_statement = next(line.strip() for line in consumer.splitlines() if line.strip() and "//" not in line)
    assert first_statement == "tl_setmaxnreg_inc<232>();"
    assert cubin.register_counts(two_consumer_warpgroups.cubin) == {"gemm": 168}
    report = ptxas_report(source, "gemm", CompileOptions(arch="sm_90a"))
    assert "Used 168 registers" in report and "setmaxnreg" not in report and "spill" in report
    assert "0 bytes spill stores, 0 bytes spill loads" in report


def test_one_consumer_warpgroup_keeps_its_registers():
    fn = static_gemm(128, 128, 64, n=1024, k=1040, m=72, threads=128, num_stages=3)
    kernel = fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True, warp_specialize=True)
    assert "setmaxnreg" not in kernel.cuda_source()


def test_a_cubin_that_starts_threads_elsewhere_is_an_error(monkeypatch):
    """Had ptxas started the threads with fewer registers than planned, the consumers' raise would wait forever
    for registers the pool never gets: the compile stops instead."""
    monkeypatch.setattr(cubin, "register_counts", lambda image: {"gemm": 154})
    fn = static_gemm(128, 256, 64, n=1024, k=1040, m=72, threads=256, num_stages=3)
    with pytest.raises(CompileError, match=r"planned setmaxnreg for 168 registers per thread at entry, but ptxas "
                                           r"gave kernel 'gemm' 154"):
        fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True, warp_specialize=True, use_cache=False)

