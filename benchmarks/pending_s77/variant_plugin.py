"""pytest plugin: the stage kernel named by $STAGE_VARIANT for the whole run."""
import os

from fsstgpu.kernels import fsst_encode


def pytest_configure(config):
    variant = os.environ.get("STAGE_VARIANT")
    if variant:
        fsst_encode.STAGE_KERNEL = variant
        print("STAGE_KERNEL", fsst_encode.STAGE_KERNEL)
