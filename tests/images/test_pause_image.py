"""The sandbox image: registry.k8s.io/pause:3.10.1 from images/pause/pause.c."""

import os
import pathlib
import signal
import struct
import subprocess
import time

PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
PT_INTERP = 3


def program_header_types(elf: bytes) -> list[int]:
    """The p_type of every program header of a 64-bit little-endian ELF file."""
    assert elf[:6] == b"\x7fELF\x02\x01", "a 64-bit little-endian ELF file"
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    return [struct.unpack_from("<I", elf, phoff + i * phentsize)[0] for i in range(phnum)]


def test_pause_image_is_static_non_root_and_named_for_the_node(unpacked):
    rootfs, config = unpacked("pause")
    assert config.repo_tags == [PAUSE_IMAGE]
    assert config.entrypoint == ["/pause"]
    assert config.user == "65535:65535"
    assert sorted(path.name for path in rootfs.iterdir()) == ["pause"], "nothing but the binary"
    assert PT_INTERP not in program_header_types((rootfs / "pause").read_bytes()), "static: no interpreter"


def test_pause_runs_until_sigterm_and_exits_zero(unpacked, runc, tmp_path):
    rootfs, config = unpacked("pause")
    runc.bundle(tmp_path / "bundle", rootfs, config)
    name, process = runc.start(tmp_path / "bundle", tmp_path / "pause.log")
    try:
        deadline = time.monotonic() + 20
        while runc.state_of(name)["status"] != "running" and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        assert process.poll() is None, (tmp_path / "pause.log").read_text()
        runc.kill(name, "TERM")
        assert process.wait(timeout=10) == 0, "pause ends with 0 on SIGTERM"
    except subprocess.TimeoutExpired:
        raise AssertionError("pause did not end within 10 s of SIGTERM") from None
    finally:
        runc.stop(name, process)


def children_of(pid: int) -> list[str]:
    """`pid State` of every process whose parent is `pid`."""
    found = []
    for status in pathlib.Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(f"{status.parent.name} {fields['State'].strip()}")
    return found


def test_pause_reaps_orphans_re_parented_to_it(unpacked, tmp_path):
    """The image's binary as PID 1 of a new pid namespace: a process orphaned in that namespace is
    re-parented to it and, once it exits, reaped (not left a zombie)."""
    rootfs, _ = unpacked("pause")
    holder = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", str(rootfs / "pause")])
    pause_pid = None
    try:
        deadline = time.monotonic() + 10
        while not children_of(holder.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        pause_pid = int(children_of(holder.pid)[0].split()[0])
        # A shell in pause's pid namespace starts a short sleep and exits: the sleep is orphaned.
        subprocess.run(["nsenter", "--target", str(pause_pid), "--pid", "--", "sh", "-c", "sleep 0.5 & exit 0"],
                       check=True)
        time.sleep(0.2)
        assert [entry for entry in children_of(pause_pid) if " S " in f" {entry.split()[1]} "], \
            "the orphaned sleep is re-parented to pause"
        time.sleep(1.5)
        assert children_of(pause_pid) == [], "pause reaps the orphan when it exits (no zombie left)"
        os.kill(pause_pid, signal.SIGTERM)
        assert holder.wait(timeout=10) == 0, "pause as PID 1 ends with 0 on SIGTERM"
    finally:
        if holder.poll() is None:
            os.kill(pause_pid or holder.pid, signal.SIGKILL)
            holder.wait(timeout=10)
