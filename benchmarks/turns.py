"""Two processes measuring the same rows, taking turns segment by segment.

run.py starts both sides of a round (the C++ baseline and its own Python
side) at once. Each side, at the start of each segment of its rows, says
the segment's name and waits to be told to go; the driver (take_turns)
lets one side run the segment, waits until it names its next one (so the
segment is done), then lets the other side run the same segment. Both
sides of a row are measured back to back, seconds apart at most, rather
than a whole side apart; the side not running waits blocked on a pipe,
using no CPU. Which side goes first alternates from segment to segment (and
run.py shifts it by one every round).

The protocol, on two pipes named in the side's environment
(DNNL_OCL_INTEROP_BENCHMARK_TURNS = "<fd it reads>,<fd it writes>"): the
side writes "<segment>\\n" and reads one line, "go\\n". Its last segment is
END, after which it prints its results and exits. Without the variable (a
side run alone) turn() returns at once.
"""
import os
import select
import subprocess
import threading

ENV = "DNNL_OCL_INTEROP_BENCHMARK_TURNS"
END = "end"
GO = "go\n"

_channel = None  # (reader, writer), False when run alone


def turn(segment):
    """Say that `segment` starts here and wait for the driver's go (at once
    when the process runs alone)."""
    global _channel
    if _channel is None:
        spec = os.environ.pop(ENV, None)  # not for this process's own children
        if spec:
            read_fd, write_fd = (int(fd) for fd in spec.split(","))
            for fd in (read_fd, write_fd):
                os.set_inheritable(fd, False)
            _channel = (os.fdopen(read_fd, "r"), os.fdopen(write_fd, "w"))
        else:
            _channel = False
    if not _channel:
        return
    reader, writer = _channel
    writer.write(segment + "\n")
    writer.flush()
    if reader.readline() != GO:
        raise RuntimeError(f"the benchmark driver went away before segment {segment!r}")


class _side:
    """One side's process and the driver's ends of its two pipes."""

    def __init__(self, name, argv):
        self.name = name
        to_side, self._go = os.pipe()         # the side reads, the driver writes
        self._said, from_side = os.pipe()     # the side writes, the driver reads
        env = {**os.environ, ENV: f"{to_side},{from_side}"}
        try:
            self.process = subprocess.Popen(argv, env=env, pass_fds=(to_side, from_side),
                                            stdout=subprocess.PIPE, text=True)
        except BaseException:
            os.close(self._go)
            os.close(self._said)
            raise
        finally:
            os.close(to_side)
            os.close(from_side)
        self._buffer = b""
        # Read stdout as it comes: a side printing much before END must not
        # block on a full pipe while the driver waits for its next segment.
        # (A daemon: a driver stopped by an error must still be able to exit.)
        self.stdout = []
        self._reader = threading.Thread(target=lambda: self.stdout.append(self.process.stdout.read()),
                                        daemon=True)
        self._reader.start()

    def next_segment(self, timeout):
        """The segment the side names next (it has finished the one before)."""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._said], [], [], timeout)
            if not ready:
                raise RuntimeError(f"the {self.name} side named no segment in {timeout} s")
            chunk = os.read(self._said, 4096)
            if not chunk:
                code = self.process.wait()
                raise RuntimeError(f"the {self.name} side's process ended (exit {code}) before {END!r}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def go(self):
        os.write(self._go, GO.encode())

    def finish(self, timeout):
        """The side's stdout, once it has exited successfully."""
        code = self.process.wait(timeout=timeout)
        self._reader.join()
        self.close()
        if code != 0:
            raise RuntimeError(f"the {self.name} side's process failed (exit {code}; its errors above)")
        return self.stdout[0]

    def close(self):
        """The driver's ends of the pipes, and the side's stdout (its reader
        has ended)."""
        for fd in (self._go, self._said):
            if fd >= 0:
                os.close(fd)
        self._go = self._said = -1
        self.process.stdout.close()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join()
        self.close()


def take_turns(commands, first_of, timeout=1800):
    """Run the two `commands` ({side name: argv}) at once, taking turns
    segment by segment; first_of(index) names the side that runs the
    index-th segment first. Returns ({side name: its stdout}, the segments
    in order). Raises RuntimeError when the sides name different segments,
    when one ends early or fails, or names nothing for `timeout` seconds."""
    if len(commands) != 2:
        raise ValueError("take_turns runs exactly two sides")
    sides = {}
    try:
        for name, argv in commands.items():
            sides[name] = _side(name, argv)
        segments = []
        said = {name: side.next_segment(timeout) for name, side in sides.items()}
        while True:
            names = set(said.values())
            if len(names) != 1:
                raise RuntimeError("the sides name different segments: "
                                   + ", ".join(f"{n} {s!r}" for n, s in said.items()))
            segment = names.pop()
            if segment == END:
                for side in sides.values():
                    side.go()
                break
            first = first_of(len(segments))
            for name in [first] + [n for n in sides if n != first]:
                sides[name].go()
                said[name] = sides[name].next_segment(timeout)
            segments.append(segment)
        return {name: side.finish(timeout) for name, side in sides.items()}, segments
    except BaseException:
        for side in sides.values():
            side.kill()
        raise
