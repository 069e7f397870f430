"""A damaged or swapped layer on the server is the server's fault: a 500 that
names the layer and never a filesystem path, for the table look-ups of that
layer's positions only; the search process leaves the layer out (and
/api/info says so) and searches without it, that layer's positions too."""

import shutil

import h5py
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient

from solver import tables
from solver.web import create_app

BAD = 9
IN_BAD = "0-2-1-0-1-1/1-1-0-1-1-0 S"  # 9 seeds
ELSEWHERE = "0-1-1-0-1-1/1-1-0-0-0-0 S"  # 6 seeds


def _damage(path, how, table_dir):
    if how == "rewritten":
        with h5py.File(path, "r+") as handle:
            dataset = handle[tables.DATASET]
            for rank in range(5, 160_000, 10_007):
                dataset[rank] = -int(dataset[rank]) - 1
    else:  # another layer's file under this name
        shutil.copyfile(tables.table_path(table_dir, BAD - 1), path)


@pytest.mark.parametrize("how", ["rewritten", "swapped"])
def test_a_bad_layer_is_a_500_naming_it_and_searches_go_on_without_it(table_dir, tmp_path, how):
    directory = str(tmp_path / "served")
    shutil.copytree(table_dir, directory)
    _damage(tables.table_path(directory, BAD), how, table_dir)
    app = create_app(directory, max_search_time=0.3, max_line_time=30)
    with TestClient(app) as client:
        for path, body in (("/api/position", {"position": IN_BAD}), ("/api/line", {"position": IN_BAD})):
            response = client.post(path, json=body)
            message = response.json()["error"]
            assert response.status_code == 500, (path, response.text)
            assert f"layer {BAD}" in message and str(tmp_path) not in message and "/" not in message, message
        # The engine and the search go on without the layer, in it as elsewhere.
        for path, body in (("/api/engine", {"position": IN_BAD, "time": 0.1}),
                           ("/api/search", {"position": IN_BAD, "time": 0.1, "move_values": False})):
            response = client.post(path, json=body)
            assert response.status_code == 200, (path, response.text)
            assert response.json()["source"] == "search", response.text
        for path, body in (("/api/position", {"position": ELSEWHERE}), ("/api/line", {"position": ELSEWHERE}),
                           ("/api/search", {"position": ELSEWHERE, "time": 0.1, "move_values": False}),
                           ("/api/engine", {"position": "4-4-4-4-4-4/4-4-4-4-4-4 S", "time": 0.1})):
            response = client.post(path, json=body)
            assert response.status_code == 200, (path, response.text)
        info = client.get("/api/info").json()
        assert list(info["left_out_of_search"]) == [str(BAD)]
        assert str(tmp_path) not in str(info)
        bad_request = client.post("/api/position", json={"position": "1-2-3 S"})
        assert bad_request.status_code == 400


def test_info_names_the_damaged_layers_before_any_search(table_dir, tmp_path):
    """/api/info, asked first, waits for the search process to read its
    tables: the damaged layers are named, not an empty `left_out_of_search`."""
    directory = str(tmp_path / "served")
    shutil.copytree(table_dir, directory)
    for seeds in (10, 12):
        with h5py.File(tables.table_path(directory, seeds), "r+") as handle:
            dataset = handle[tables.DATASET]
            for rank in range(5, dataset.shape[0], 10_007):
                dataset[rank] = -int(dataset[rank]) - 1
    with TestClient(create_app(directory, max_search_time=0.3)) as client:
        info = client.get("/api/info").json()
        assert sorted(info["left_out_of_search"]) == ["10", "12"]
        assert "layer 12" in info["left_out_of_search"]["12"] and str(tmp_path) not in str(info)
