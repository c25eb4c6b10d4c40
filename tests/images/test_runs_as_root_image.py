"""The e2e suite's root-user fixture (images/runs-as-root/Dockerfile): the pause binary with user 0,
which the real kubelet must refuse under runAsNonRoot."""


def test_runs_as_root_image_is_the_pause_binary_with_user_zero(unpacked):
    rootfs, config = unpacked("runs-as-root")
    assert config.repo_tags == ["localhost/llm-operator/runs-as-root:test"]
    assert config.user == "0", "the kubelet's runAsNonRoot check needs an image that says it runs as root"
    assert config.entrypoint == ["/pause"]
    assert sorted(path.name for path in rootfs.iterdir()) == ["pause"], "nothing but the pause binary"
