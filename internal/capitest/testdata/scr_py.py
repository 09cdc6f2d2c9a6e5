"""SCR's sequence from Python through module scr and mpi4py, run by
bindings_test.go under mpirun.

  scr_py.py start:   no checkpoint on offer; writes checkpoints pyckpt.1 to
                     pyckpt.3 (pyckpt.N/rank_R.bin, bytes that depend on N
                     and the rank), then the OUTPUT dataset pyout.1
                     (pyout/rank_R.txt).
  scr_py.py restart: pyckpt.3 is on offer; every rank reads its file back
                     and checks it, then the last rank votes the restart
                     invalid, so pyckpt.3 is marked failed and pyckpt.2 is
                     offered next, read back, checked and kept.

Any difference aborts the job (a non-zero exit status).
"""
import os
import sys

from mpi4py import MPI
import scr

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size


def fail(msg):
    print("FAIL rank %d: %s" % (rank, msg), flush=True)
    comm.Abort(1)


def check(ok, msg):
    if not ok:
        fail(msg)


def content(n):
    """Checkpoint n's bytes for this rank (a length of its own per rank)."""
    return bytes((n * 31 + rank * 7 + k * 13) % 256 for k in range(6000 + 17 * rank))


def read_back(name, n):
    path = scr.route_file(os.path.join(name, "rank_%d.bin" % rank))
    with open(path, "rb") as f:
        data = f.read()
    check(data == content(n), "%s: %d bytes read back differ from the %d written"
          % (path, len(data), len(content(n))))


mode = sys.argv[1]
scr.init()
name = scr.have_restart()
if mode == "start":
    check(name is None, "checkpoint %r on offer on the first run" % name)
    for n in range(1, 4):
        scr.start_output("pyckpt.%d" % n, scr.FLAG_CHECKPOINT)
        path = scr.route_file("pyckpt.%d/rank_%d.bin" % (n, rank))
        check(isinstance(path, str), "route_file gave %r" % (path,))
        with open(path, "wb") as f:
            f.write(content(n))
        check(scr.complete_output(True) is True, "complete_output of pyckpt.%d" % n)
        check(scr.should_exit() is False, "should_exit")
    scr.start_output("pyout.1", scr.FLAG_OUTPUT)
    with open(scr.route_file("pyout/rank_%d.txt" % rank), "w") as f:
        f.write("py rank %d of %d\n" % (rank, size))
    check(scr.complete_output(True) is True, "complete_output of pyout.1")
    print("rank %d wrote 3 checkpoints" % rank, flush=True)
else:
    check(name == "pyckpt.3", "offered %r, want pyckpt.3" % name)
    check(scr.start_restart() == "pyckpt.3", "start_restart")
    read_back("pyckpt.3", 3)
    try:
        scr.route_file("pyckpt.3/not_written.bin")
        fail("route_file of a file the checkpoint lacks did not raise")
    except RuntimeError:
        pass
    ok = scr.complete_restart(rank != size - 1)
    check(ok is False, "complete_restart with the last rank invalid gave %r" % ok)
    name = scr.have_restart()
    check(name == "pyckpt.2", "after pyckpt.3 failed, offered %r, want pyckpt.2" % name)
    check(scr.start_restart() == "pyckpt.2", "start_restart")
    read_back("pyckpt.2", 2)
    check(scr.complete_restart() is True, "complete_restart of pyckpt.2")
    print("rank %d restarted from %s" % (rank, name), flush=True)
scr.finalize()
