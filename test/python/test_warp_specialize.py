"""warp-specialize (compile option warp_specialize=True, with tma=True): the thread-stage IR of a TMA-fed wgmma
GEMM split into a producer warpgroup (ids >= threads, one elected thread issuing every box, each reused slot after
its `empty` wait) and the user's threads consuming (the full wait, the wgmma, the release after the wgmma_wait that
retires it); and the option's checks. The CPU thread-level simulator does not run the split launch yet (its roles
synchronize only through mbarriers, which needs interleaved schedules): a compile for it is a located error."""

import re

import pytest

from support import static_gemm
from tilemlir import driver
from tilemlir.diagnostics import CompileError


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
    assert text.count(f"{{count = {threads} : i64}}") == stages  # empty[s]: every consumer thread arrives
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


def test_the_simulator_refuses_the_split_launch_with_a_location():
    fn = static_gemm(64, 64, 64, n=72, k=136, m=72, num_stages=3)
    with pytest.raises(CompileError, match=r"support\.py:\d+:\d+: error: cannot simulate tile.wgmma under a "
                                           r"thread-dependent condition"):
        fn.compile("cpu", level="thread", tensor_cores="wgmma", tma=True, warp_specialize=True)
