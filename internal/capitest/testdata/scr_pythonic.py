"""The Pythonic layer of module scr (output() and restarts()) under
mpirun, run by bindings_test.go.

  scr_pythonic.py start:   no checkpoint on offer; checkpoints py-step-1 to
                           py-step-3 (py-state/rank_R.bin, the same path in
                           each) in with blocks; py-step-4's block raises on
                           the last rank, so it completes invalid on every
                           rank; then the OUTPUT dataset pyviz.1
                           (pyviz/rank_R.txt).
  scr_pythonic.py restart: restarts() offers py-step-3 first (never the
                           invalid py-step-4); it is read back, checked and
                           restored.

Any difference aborts the job (a non-zero exit status).
"""
import sys

from mpi4py import MPI
import scr

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
STATE = "py-state/rank_%d.bin" % rank


def check(ok, msg):
    if not ok:
        print("FAIL rank %d: %s" % (rank, msg), flush=True)
        comm.Abort(1)


def content(step):
    return bytes((step * 29 + rank * 11 + k * 7) % 256 for k in range(4096 + 5 * rank))


mode = sys.argv[1]
scr.init()
if mode == "start":
    offered = [r.name for r in scr.restarts()]
    check(offered == [], "offered %r on the first run" % offered)
    for step in range(1, 4):
        with scr.output("py-step-%d" % step) as out:
            with open(out.route(STATE), "wb") as f:
                f.write(content(step))
        check(out.ok is True, "py-step-%d completed %r" % (step, out.ok))

    class WriteError(Exception):
        pass

    try:
        with scr.output("py-step-4", scr.FLAG_CHECKPOINT) as out:
            with open(out.route(STATE), "wb") as f:
                f.write(content(4)[:100])
            if rank == size - 1:
                raise WriteError("simulated write error")
    except WriteError:
        pass
    check(out.ok is False, "py-step-4, invalid on the last rank, completed %r" % out.ok)

    with scr.output("pyviz.1", scr.FLAG_OUTPUT) as out:
        with open(out.route("pyviz/rank_%d.txt" % rank), "w") as f:
            f.write("viz rank %d of %d\n" % (rank, size))
    check(out.ok is True, "pyviz.1 completed %r" % out.ok)
    print("rank %d wrote 3 checkpoints" % rank, flush=True)
else:
    tried, restored = [], None
    for r in scr.restarts():
        tried.append(r.name)
        with r:
            try:
                with open(r.route(STATE), "rb") as f:
                    r.valid = f.read() == content(int(r.name.rsplit("-", 1)[1]))
            except (OSError, RuntimeError) as e:
                print("rank %d: %s: %s" % (rank, r.name, e), flush=True)
                r.valid = False
        if r.ok:
            restored = r.name
    check(tried == ["py-step-3"] and restored == "py-step-3",
          "tried %r, restored %r: want py-step-3 first and restored" % (tried, restored))
    print("rank %d restarted from %s" % (rank, restored), flush=True)
scr.finalize()
