"""The seventh new-user round's defects (validate/FINDINGS.md "Issue 18: the seventh new-user round"),
each typed as the user typed it: a hardware file's misspelt architecture silently changed the time, a
missing link bandwidth named the wrong group, a directory given as a hardware file 'did not exist'."""
import json

import cli

SHOW = ["hardware", "--show", "h100-sxm"]


def _copy(tmp_path, capsys, **edits):
    """The user's way to a hardware file: `hardware --show h100-sxm`, renamed, one field edited."""
    assert cli.main(SHOW) == 0
    data = json.loads(capsys.readouterr().out)
    data["name"] = "my-h100"
    for key, value in edits.items():
        if isinstance(value, dict):
            data[key].update(value)
        else:
            data[key] = value
    path = tmp_path / "my-h100.json"
    path.write_text(json.dumps(data))
    return str(path)


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_misspelt_architecture_is_one_line(tmp_path, capsys):
    """"hoper" for "hopper" ran (exit 0) without the Hopper attention and FP8 figures: Llama 3 8B's
    8,192-token prefill 196 ms instead of 227 ms, a dp 8 FP8 step 452 ms instead of 490 ms."""
    path = _copy(tmp_path, capsys, architecture="hoper")
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", path, "--prompt", "512", "--gen", "8"]) == 2
    assert _one_line(capsys) == (f"error: {path}: not a valid hardware file: architecture 'hoper' is not one of "
                                 "volta, turing, ampere, ada, hopper, blackwell, cdna2, cdna3, cdna4, cpu.")


def test_the_copy_with_its_architecture_spelt_right_runs(tmp_path, capsys):
    path = _copy(tmp_path, capsys, architecture="hopper")
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", path, "--prompt", "512", "--gen", "8"]) == 0


def test_no_link_bandwidth_names_the_tensor_parallel_group(tmp_path, capsys):
    """intra_node_bandwidth_bytes_per_s 0 with --tp 2: the refusal said 'a group of 1 GPUs'
    (collectives.within_node asked for link(1)); the group is the two tp ranks."""
    path = _copy(tmp_path, capsys, interconnect={"intra_node_bandwidth_bytes_per_s": 0}, network_of="")
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", path, "--tp", "2", "--prompt", "512",
                     "--gen", "8"]) == 2
    assert "no interconnect bandwidth for a group of 2 GPUs (within nodes of 8)" in _one_line(capsys)


def test_a_directory_as_a_hardware_file(tmp_path, capsys):
    """It said the directory 'does not exist'."""
    assert cli.main(["simulate", "--model", "llama3-8b", "--hardware", str(tmp_path)]) == 2
    assert _one_line(capsys) == f"error: {tmp_path}: is a directory, not a hardware file (.json)."
