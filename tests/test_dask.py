"""fsstgpu.integrations.dask on a local CPU cluster (2 worker processes): datasets round-trip
exactly, and a worker killed mid-file loses no output and leaves no partial file."""

from __future__ import annotations

import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

from fsstgpu.datasets import generate  # noqa: E402
from fsstgpu.formats import read_table  # noqa: E402
from fsstgpu.formats.atomic import TEMP_SUFFIX  # noqa: E402
from fsstgpu.integrations.dask import compress_dataset, decompress_dataset, local_client  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests/
#: this process's FSSTGPU_THREADS before any cluster started (local_client set it for good)
THREADS_BEFORE = os.environ.get("FSSTGPU_THREADS")


@pytest.fixture(scope="module")
def client():
    with local_client(workers=2) as c:
        yield c


def test_local_client_leaves_this_process_environment_alone(client, monkeypatch):
    # issue #22: local_client wrote FSSTGPU_THREADS into os.environ and left it there
    assert os.environ.get("FSSTGPU_THREADS") == THREADS_BEFORE  # worker processes: theirs only
    assert all(client.run(lambda: os.environ.get("FSSTGPU_THREADS")).values())
    monkeypatch.delenv("FSSTGPU_THREADS", raising=False)
    with local_client(workers=1, processes=False, threads=3):  # thread workers: while it runs
        assert os.environ["FSSTGPU_THREADS"] == "3"
    assert "FSSTGPU_THREADS" not in os.environ
    monkeypatch.setenv("FSSTGPU_THREADS", "5")
    with local_client(workers=1, processes=False, threads=3):
        assert os.environ["FSSTGPU_THREADS"] == "5"  # the user's choice stands
    assert os.environ["FSSTGPU_THREADS"] == "5"


def _dataset(root, files=5, rows=2000):
    tables = {}
    for k in range(files):
        rel = f"part={k % 2}/f{k}.parquet"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        tables[rel] = pa.table({"u": generate("urls", rows, k), "w": generate("null_heavy", rows,
                                                                              k + 10),
                                "k": pa.array(range(rows))})
        pq.write_table(tables[rel], root / rel, row_group_size=500)
    return tables


def test_dataset_round_trips_on_a_cluster(client, tmp_path):
    tables = _dataset(tmp_path / "in")
    info = compress_dataset(tmp_path / "in", tmp_path / "c", client=client)
    assert [r["output"] for r in info] == [str(tmp_path / "c" / rel) for rel in sorted(tables)]
    assert all(r["columns"] == ["u", "w"] and r["units"] == 4 for r in info)
    back = decompress_dataset(tmp_path / "c", tmp_path / "p", client=client, device="cpu")
    assert len(back) == len(tables)
    for rel, table in tables.items():
        assert pq.read_table(tmp_path / "p" / rel).equals(table)
        assert read_table(tmp_path / "c" / rel, device="cpu").equals(table)
    workers = client.run(lambda: os.environ.get("FSSTGPU_THREADS"))
    assert len(workers) == 2 and all(v is not None for v in workers.values())


def _die_once(marker: str):
    """A progress callback that kills its worker process after the first row group of the
    first file it sees, once (the marker file says it already did)."""
    def on_unit(**progress):
        if progress["units_done"] == 1 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # as SIGKILL would: no cleanup, the temporary file stays behind
    return on_unit


def test_a_worker_killed_mid_file_loses_nothing(client, tmp_path):
    tables = _dataset(tmp_path / "in", files=4)
    marker = str(tmp_path / "killed")
    info = compress_dataset(tmp_path / "in", tmp_path / "c", client=client,
                            on_unit=_die_once(marker))
    assert os.path.exists(marker)  # a worker did die mid-file
    assert len(info) == len(tables)
    for rel, table in tables.items():
        assert read_table(tmp_path / "c" / rel, device="cpu").equals(table)
    assert not list((tmp_path / "c").rglob(f"*{TEMP_SUFFIX}"))
    client.wait_for_workers(2, timeout=60)


def test_cli_runs_a_dataset_on_local_workers(tmp_path):
    import json

    from typer.testing import CliRunner

    from fsstgpu.cli.app import app

    tables = _dataset(tmp_path / "in", files=3, rows=800)
    res = CliRunner().invoke(app, ["compress", str(tmp_path / "in"), str(tmp_path / "c"),
                                   "--workers", "2", "--json"])
    assert res.exit_code == 0, res.stderr
    assert len(json.loads(res.stdout)) == 3
    for rel, table in tables.items():
        assert read_table(tmp_path / "c" / rel, device="cpu").equals(table)



def test_cli_error_on_local_workers_is_one_line(tmp_path):
    """A file that fails on a worker: the command line's one line, with nothing else on stderr
    (distributed's worker logged "Compute Failed" with the task's traceback there, and warned
    of the tasks it cancelled)."""
    import subprocess

    _dataset(tmp_path / "in", files=3, rows=200)
    (tmp_path / "in" / "part=0" / "f0.parquet").write_bytes(b"PAR1 not a file PAR1")
    res = subprocess.run([sys.executable, "-c", "from fsstgpu.cli.app import main; main()",
                          "compress", str(tmp_path / "in"), str(tmp_path / "c"),
                          "--workers", "2", "--no-progress"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 4, res.stderr
    assert res.stderr.splitlines() == [res.stderr.strip()], res.stderr
    assert res.stderr.startswith("fsstgpu: error: ") and "f0.parquet" in res.stderr



def _unretrieved(exc: BaseException) -> None:
    """A task that ends with ``exc``, never retrieved: asyncio logs it when it is collected."""
    import asyncio
    import gc

    async def main():
        async def fail():
            raise exc

        task = asyncio.ensure_future(fail())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        del task

    loop = asyncio.new_event_loop()
    loop.run_until_complete(main())
    gc.collect()
    loop.close()


def test_a_stopped_gather_logs_no_tracebacks(caplog):
    """SIGTERM during `compress --workers N`: asyncio logged "Task exception was never
    retrieved" with a traceback of distributed.client.AllExit four times (the gather's waits,
    collected after the client closed) before the command line's one line."""
    from distributed.client import AllExit

    with local_client(workers=1, processes=False, quiet=True):
        pass
    caplog.clear()
    _unretrieved(AllExit())
    _unretrieved(ValueError("not distributed's"))  # (anything else is still told)
    told = [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert [type(r.exc_info[1]).__name__ for r in told] == ["ValueError"]


def test_reading_onto_gpus_is_planned_as_a_bag_of_files_or_row_groups(tmp_path):
    from fsstgpu.formats import compress_dataset as compress_here
    from fsstgpu.integrations.dask import dataset_parts, read_dataset_to_gpus

    _dataset(tmp_path / "in", files=3, rows=1200)  # 3 row groups of 500, 500, 200 each

    compress_here(tmp_path / "in", tmp_path / "c")
    assert len(dataset_parts(tmp_path / "c")) == 3
    parts = dataset_parts(tmp_path / "c", by="row_group")
    assert [k for _, k in parts] == [0, 1, 2] * 3
    assert read_dataset_to_gpus(tmp_path / "c", by="row_group").npartitions == 9
    with pytest.raises(ValueError, match="by must be"):
        dataset_parts(tmp_path / "c", by="page")


def test_reading_onto_gpus_adds_the_hive_keys_as_read_dataset_does(tmp_path, monkeypatch):
    """Each partition of read_dataset_to_gpus carries its file's hive keys as host columns of
    read_dataset's types and values (they were missing); by file and by row group; none with
    partitioning=None. The GPU readers are stood in for by the CPU's (the wiring is what is
    tested here; the GPU test below decodes on a GPU)."""
    import contextlib
    import types

    import fsstgpu.integrations.dask as on_dask
    from fsstgpu.formats import compress_dataset as compress_here, read_dataset

    def host_columns(table):
        return {name: table.column(name) for name in table.column_names}

    monkeypatch.setattr(on_dask, "read_table_device", lambda src: host_columns(
        read_table(src, device="cpu")))
    monkeypatch.setattr(on_dask, "read_unit_to_device", lambda src, unit: host_columns(
        read_table(src, device="cpu", row_groups=[unit])))
    stream = types.SimpleNamespace(synchronize=lambda: None)
    monkeypatch.setattr(on_dask, "get_cupy", lambda: types.SimpleNamespace(
        cuda=types.SimpleNamespace(get_current_stream=lambda: stream)))
    monkeypatch.setattr(on_dask, "_worker_gpu", lambda cp: contextlib.nullcontext())
    _dataset(tmp_path / "in", files=3, rows=1200)
    compress_here(tmp_path / "in", tmp_path / "c")
    want = read_dataset(tmp_path / "c", device="cpu")
    for by in ("file", "row_group"):
        parts = on_dask.read_dataset_to_gpus(tmp_path / "c", by=by).compute(
            scheduler="synchronous")
        got = pa.concat_tables(pa.table(cols) for cols in parts)
        assert got.column_names == want.column_names == ["u", "w", "k", "part"]
        assert got.schema.field("part").type == pa.int32()
        assert got.column("part").equals(want.column("part"))
    plain = on_dask.read_dataset_to_gpus(tmp_path / "c", partitioning=None).compute(
        scheduler="synchronous")
    assert all("part" not in cols for cols in plain)
    with pytest.raises(ValueError, match="partitioning"):
        on_dask.read_dataset_to_gpus(tmp_path / "c", partitioning="dir")


@pytest.mark.gpu
def test_gpu_bag_decodes_row_groups_on_the_workers(client, tmp_path):
    from fsstgpu.formats import compress_dataset as compress_here
    from fsstgpu.integrations.dask import read_dataset_to_gpus

    tables = _dataset(tmp_path / "in", files=3, rows=1200)
    compress_here(tmp_path / "in", tmp_path / "c")
    bag = read_dataset_to_gpus(tmp_path / "c", by="row_group").persist()
    got = client.compute(bag.map(lambda cols: cols["u"].to_arrow())).result()
    expected = [tables[rel].column("u").slice(k * 500, 500)  # the dataset's order: by name
                for rel in sorted(tables) for k in range(3)]
    assert len(got) == 9
    for g, e in zip(got, expected, strict=True):
        assert pa.chunked_array(g).equals(e)
    keys = client.compute(bag.map(lambda cols: cols["part"].to_pylist())).result()
    assert keys == [[int(rel[5])] * len(e) for rel, e in zip(
        [rel for rel in sorted(tables) for _ in range(3)], expected, strict=True)]


def test_fsstgpu_threads_caps_the_codec_pool(monkeypatch):
    from fsstgpu.parallel import usable_cores

    monkeypatch.delenv("FSSTGPU_THREADS", raising=False)
    cores = usable_cores()
    monkeypatch.setenv("FSSTGPU_THREADS", "1")
    assert usable_cores() == 1
    monkeypatch.setenv("FSSTGPU_THREADS", str(cores + 5))  # never more than the process may use
    assert usable_cores() == cores
    monkeypatch.setenv("FSSTGPU_THREADS", "")  # unset in effect
    assert usable_cores() == cores
    for junk in ("two", "-3"):  # a typo is refused, not run on every core
        monkeypatch.setenv("FSSTGPU_THREADS", junk)
        with pytest.raises(ValueError, match="FSSTGPU_THREADS"):
            usable_cores()


def test_negative_threads_are_refused_before_any_worker_starts():
    with pytest.raises(ValueError, match="threads must not be negative"):
        with local_client(workers=1, processes=False, threads=-2):
            pass


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    (dict(threads=1.5), TypeError, "whole numbers or None, not 1 and 1.5"),
    (dict(threads=True), TypeError, "whole numbers or None, not 1 and True"),
    (dict(threads="2"), TypeError, "whole numbers or None, not 1 and '2'"),
    (dict(workers=-1), ValueError, "workers must not be negative"),
    (dict(workers=True), TypeError, "not True and None"),
    (dict(workers=1.5), TypeError, "not 1.5 and None"),
])
def test_workers_and_threads_are_whole_numbers_before_any_worker_starts(kwargs, error, message):
    # threads=1.5 / True reached the workers as FSSTGPU_THREADS '1.5' / 'True', refused there on
    # first use; workers=-1 made a cluster of no workers (every task waited for ever), True a
    # cluster of one, 1.5 failed inside distributed
    with pytest.raises(error, match=message):
        with local_client(processes=False, **{"workers": 1, **kwargs}):
            pass


def test_an_output_that_exists_is_named_before_any_task_runs(tmp_path):
    """As compress_dataset without Dask (b75faeb): with one output there already, the other
    files were written, then the failure; a rerun then failed on them."""
    tables = _dataset(tmp_path / "in", files=3, rows=50)
    taken = tmp_path / "c" / "part=0" / "f2.parquet"
    taken.parent.mkdir(parents=True)
    taken.write_bytes(b"keep me")
    with local_client(workers=1, processes=False) as client:
        with pytest.raises(FileExistsError, match="f2.parquet: already exists"):
            compress_dataset(tmp_path / "in", tmp_path / "c", client=client)
        assert [p for p in (tmp_path / "c").rglob("*") if p.is_file()] == [taken]
        assert taken.read_bytes() == b"keep me"
        compress_dataset(tmp_path / "in", tmp_path / "c", client=client, force=True)
    assert read_table(taken, device="cpu").equals(tables["part=0/f2.parquet"])


@pytest.mark.parametrize("run", ["compress", "decompress"])
def test_a_wrong_on_unit_is_refused_before_any_task(tmp_path, run):
    """As the serial path's progress=: a non-callable on_unit failed in every task, on the
    worker, each file's folder left made in the output."""
    _dataset(tmp_path / "in", files=2, rows=20)
    fn = compress_dataset if run == "compress" else decompress_dataset
    with local_client(workers=1, processes=False) as client:
        with pytest.raises(TypeError, match="progress must be a callable or None, not int"):
            fn(tmp_path / "in", tmp_path / "out", client=client, on_unit=5)
    assert not (tmp_path / "out").exists()


def _wait_for(marker: str):
    """A progress callback that holds each file at its first row group until ``marker`` exists."""
    def on_unit(**progress):
        import time

        while progress["units_done"] == 1 and not os.path.exists(marker):
            time.sleep(0.01)
    return on_unit


def _idle(client) -> bool:
    """Whether the cluster runs or waits to run no task of this client's."""
    busy = client.run_on_scheduler(lambda dask_scheduler: sum(
        ts.state not in ("memory", "erred", "released", "forgotten")
        for ts in dask_scheduler.tasks.values()))
    return not busy and not any(client.run(lambda dask_worker: len(dask_worker.state.executing))
                                .values())


def test_a_failure_stops_the_other_files_and_leaves_no_folder(tmp_path):
    """As the serial path stops at a failing file and removes the folders it made: the other
    tasks ran on after compress_dataset had raised (while its traceback held their futures),
    writing outputs that a rerun then met as existing, and the failing file's folder stayed."""
    import time

    tables = _dataset(tmp_path / "in", files=5, rows=40)  # part=0: f0, f2, f4; part=1: f1, f3
    (tmp_path / "in" / "part=0" / "f0.parquet").write_bytes(b"PAR1 not a file PAR1")
    marker = tmp_path / "go"
    with local_client(workers=1, processes=False) as client:
        with pytest.raises(Exception, match="f0.parquet") as failed:  # (held, as a caller can)
            compress_dataset(tmp_path / "in", tmp_path / "c", client=client,
                             on_unit=_wait_for(str(marker)))
        marker.touch()  # the task started next, if any, goes on
        deadline = time.monotonic() + 60
        while not _idle(client) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert failed.value is not None
    written = sorted(p.relative_to(tmp_path / "c").as_posix()
                     for p in (tmp_path / "c").rglob("*")) if (tmp_path / "c").exists() else []
    assert len([p for p in written if p.endswith(".parquet")]) <= 1, written  # one at most: the
    # one its worker started before the cancel came, written whole
    assert not [p for p in written if p.endswith(TEMP_SUFFIX)]
    for rel in written:
        if rel.endswith(".parquet"):
            assert read_table(tmp_path / "c" / rel, device="cpu").equals(tables[rel])
        else:  # a folder: only one holding that file
            assert any(p.startswith(rel + "/") for p in written), written


def test_a_failing_file_leaves_no_empty_folder(tmp_path):
    (tmp_path / "in" / "y=1").mkdir(parents=True)
    (tmp_path / "in" / "y=1" / "bad.parquet").write_bytes(b"PAR1 not a file PAR1")
    with local_client(workers=1, processes=False) as client:
        with pytest.raises(Exception, match="bad.parquet"):
            compress_dataset(tmp_path / "in", tmp_path / "c" / "deep", client=client)
    assert sorted(os.listdir(tmp_path)) == ["in"]  # as the serial path: no c/, c/deep/, ...


def test_of_several_failing_files_the_first_in_the_dataset_order_is_named(tmp_path, monkeypatch):
    """The error named the file that failed first in time (the gather stopped at it), not the
    first in the dataset's order, which the serial path names: a message that depended on the
    scheduling. Here b.parquet fails while a.parquet, before it, is still at work; a.parquet
    then fails too and is the one named, the files after b.parquet never run."""
    import time

    import fsstgpu.integrations.dask as fdask

    for name in ("a", "b"):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"{name}.parquet").write_bytes(b"PAR1 not a file PAR1")
    for name in ("c", "d", "e"):
        pq.write_table(pa.table({"s": ["x"]}), tmp_path / "in" / f"{name}.parquet")
    marker, real = str(tmp_path / "b failing"), fdask._compress_one

    def one(src, dst, *args):
        if src.endswith("a.parquet"):  # (a bound on the wait: a's worker may run b first)
            deadline = time.monotonic() + 20
            while not os.path.exists(marker) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.5)  # b's error has reached the client
        elif src.endswith("b.parquet"):
            open(marker, "w").close()
        return real(src, dst, *args)

    monkeypatch.setattr(fdask, "_compress_one", one)
    with local_client(workers=2, processes=False) as client:
        with pytest.raises(Exception, match="a.parquet") as failed:
            compress_dataset(tmp_path / "in", tmp_path / "c", client=client)
    assert "b.parquet" not in str(failed.value)
    assert os.path.exists(marker)  # (b ran, and failed first)
