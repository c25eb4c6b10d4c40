"""The sandbox image: registry.k8s.io/pause:3.10.1 from images/pause/pause.c."""

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
