"""Run an unpacked image with runc (Debian's package): the image's entrypoint, user, environment and
working directory, as a container runtime would, in its own pid/ipc/uts/mount namespaces.

network="none" gives the container a network namespace of its own with nothing in it (not even a
configured loopback): whatever it does, no packet leaves. network="host-loopback" shares the host's
namespace so that it can reach, or serve, 127.0.0.1; the tests then only ever use 127.0.0.1.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import uuid

from image_rootfs import ImageConfig


def _user(spec: str) -> dict:
    uid, _, gid = spec.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        raise ValueError(f"image user {spec!r} is not numeric (runAsNonRoot needs a numeric user)")
    return {"uid": int(uid), "gid": int(gid or 0)}


class Runc:
    def __init__(self, state: pathlib.Path):
        self.state = state

    def _runc(self, *args: str) -> list[str]:
        return ["runc", "--root", str(self.state), *args]

    def bundle(
        self, bundle: pathlib.Path, rootfs: pathlib.Path, config: ImageConfig, args: list[str] | None = None,
        network: str = "none", binds: dict[str, tuple[pathlib.Path, bool]] | None = None,
        env: dict[str, str] | None = None, command: list[str] | None = None, read_only: bool = False,
    ) -> None:
        """Write bundle/config.json: `runc spec`'s defaults with the image's run configuration.
        `args` replace the image's Cmd (after its Entrypoint); `command` replaces both; `read_only`
        mounts the root filesystem read-only, as a pod's readOnlyRootFilesystem does."""
        bundle.mkdir(parents=True, exist_ok=True)
        (bundle / "config.json").unlink(missing_ok=True)
        subprocess.run(self._runc("spec", "--bundle", str(bundle)), check=True)
        spec = json.loads((bundle / "config.json").read_text())
        process = spec["process"]
        process["terminal"] = False
        process["args"] = command or config.entrypoint + (config.cmd if args is None else args)
        process["env"] = config.env + [f"{key}={value}" for key, value in (env or {}).items()]
        process["cwd"] = config.workdir
        process["user"] = _user(config.user)
        spec["root"] = {"path": str(rootfs), "readonly": read_only}
        spec["hostname"] = "images-test"
        if network == "host-loopback":
            spec["linux"]["namespaces"] = [ns for ns in spec["linux"]["namespaces"] if ns["type"] != "network"]
        elif network != "none":
            raise ValueError(f"network {network!r}: none or host-loopback")
        for target, (source, writable) in (binds or {}).items():
            spec["mounts"].append({
                "destination": target, "type": "bind", "source": str(source),
                "options": ["rbind", "rw" if writable else "ro"],
            })
        (bundle / "config.json").write_text(json.dumps(spec, indent=1))

    def run(self, bundle: pathlib.Path, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run to completion; stdout and stderr are the container's."""
        name = f"images-test-{uuid.uuid4().hex[:10]}"
        try:
            return subprocess.run(
                self._runc("run", "--bundle", str(bundle), name), capture_output=True, text=True, timeout=timeout,
            )
        finally:
            subprocess.run(self._runc("delete", "--force", name), capture_output=True)

    def start(self, bundle: pathlib.Path, log: pathlib.Path) -> tuple[str, subprocess.Popen]:
        """Start in the background (runc in the foreground of a child process, so its exit code is the
        container's); output goes to `log`. Returns the container's name and that process."""
        name = f"images-test-{uuid.uuid4().hex[:10]}"
        with log.open("wb") as out:
            process = subprocess.Popen(
                self._runc("run", "--bundle", str(bundle), name), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            )
        return name, process

    def state_of(self, name: str) -> dict:
        result = subprocess.run(self._runc("state", name), capture_output=True, text=True)
        return json.loads(result.stdout) if result.returncode == 0 else {"status": "gone"}

    def kill(self, name: str, signal: str = "KILL") -> None:
        subprocess.run(self._runc("kill", name, signal), capture_output=True)

    def stop(self, name: str, process: subprocess.Popen) -> None:
        """Kill and remove the container, wherever it is in its life."""
        self.kill(name)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        subprocess.run(self._runc("delete", "--force", name), capture_output=True)
