"""pytest plugin: run the tests with fsst_encode.STAGE_KERNEL from $STAGE_VARIANT."""
import os


def pytest_configure(config):
    from fsstgpu.kernels import fsst_encode
    v = os.environ.get("STAGE_VARIANT")
    if v:
        fsst_encode.STAGE_KERNEL = v
        print("STAGE_KERNEL", fsst_encode.STAGE_KERNEL)
