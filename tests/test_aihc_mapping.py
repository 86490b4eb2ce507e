"""The v1 <-> v2 CreateJob body mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.utils import translation

from jobs import spec as S
from jobs.aihc.mapping import (
    fault_tolerance_args,
    fault_tolerance_config,
    v1_from_v2,
    v2_from_v1,
)

SEED = json.loads((Path(__file__).parent / "data" / "seed001_create_job_request.json").read_text())


def test_the_seed_body_maps_to_v2_and_back_unchanged():
    v2 = v2_from_v1(SEED)

    assert v2["jobType"] == "PyTorchJob"
    assert v2["command"] == SEED["jobSpec"]["command"]
    assert v2["queue"] == "default"
    assert "jobFramework" not in v2 and "command" not in v2["jobSpec"]
    assert v2["datasources"] == SEED["datasources"]
    assert v2["jobSpec"] == {k: v for k, v in SEED["jobSpec"].items() if k != "command"}
    assert v1_from_v2(v2) == SEED


def test_fault_tolerance_config_becomes_flags_and_back():
    config = {
        "enabledHangDetection": True,
        "hangDetectionTimeoutMinutes": 7,
        "faultToleranceLimit": 2,
        "customFaultTolerancePattern": ["Loss nan", "connect timeout"],
    }

    args = fault_tolerance_args(config)

    assert args == (
        "--enable-hang-detection=true --hang-detection-log-timeout-minutes=7 "
        "--max-num-of-unconditional-retry=2 --custom-log-patterns='Loss nan' "
        "--custom-log-patterns='connect timeout'"
    )
    assert fault_tolerance_config(args) == config


def test_aihcs_start_up_toleration_flag_is_run_and_becomes_its_field_and_back():
    # review59: it was refused, though AIHC pairs its 7-minute threshold with it.
    args = (
        "--enable-hang-detection=true --hang-detection-log-timeout-minutes=7 "
        "--hang-detection-startup-toleration-minutes=15"
    )

    config = fault_tolerance_config(args)

    assert config == {
        "enabledHangDetection": True,
        "hangDetectionTimeoutMinutes": 7,
        "hangDetectionStartupTolerationMinutes": 15,
    }
    assert fault_tolerance_args(config) == args


def test_a_bare_hang_detection_flag_turns_it_on_and_a_flag_the_console_does_not_run_is_refused():
    assert fault_tolerance_config("--enable-hang-detection") == {"enabledHangDetection": True}
    for args, named in (
        ("--enable-replace=true", "--enable-replace"),
        ("--max-num-of-unconditional-retry=many", "--max-num-of-unconditional-retry"),
        ("--enable-hang-detection=yes", "--enable-hang-detection"),
        ("--custom-log-patterns='unclosed", "quotation"),
    ):
        # In English: the unclosed quote's message was shlex's own, English in any language,
        # until QA 54 translated it (the Chinese one: tests/test_aihc_migration.py).
        with translation.override("en"), pytest.raises(ValueError, match=named):
            fault_tolerance_config(args)


def test_a_full_spec_round_trips_through_v2():
    spec = S.JobSpec(
        name="ft-job",
        resource_pool_id="cce-1",
        queue="research",
        framework=S.MPI,
        priority="high",
        image="registry.example.com/mpi:1",
        command="mpirun python train.py",
        roles=[
            S.Role("master", 1, "baidu.com/a800_80g_cgpu", 8),
            S.Role("worker", 3, "baidu.com/a800_80g_cgpu", 8),
        ],
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(True, 10, 1, []),
        labels=[("team", "nlp")],
        retention_period="7d",
    )
    v1 = spec.to_v1_body()

    v2 = v2_from_v1(v1)

    assert v2["jobType"] == "MPIJob" and v2["priority"] == "high"
    assert v2["faultTolerance"] is True
    assert v2["faultToleranceArgs"] == (
        "--enable-hang-detection=true --hang-detection-log-timeout-minutes=10 "
        "--max-num-of-unconditional-retry=1"
    )
    assert v2["labels"] == [{"key": "team", "value": "nlp"}]
    assert v2["retentionPeriod"] == "7d"
    assert v1_from_v2(v2) == v1


def test_a_tensorflow_job_maps_to_one_spec_per_role():
    roles = [
        S.Role("chief", 1, "nvidia.com/gpu", 1),
        S.Role("worker", 2, "nvidia.com/gpu", 2),
        S.Role("evaluator", 0),
    ]
    spec = S.JobSpec(
        name="tf",
        resource_pool_id="p",
        framework=S.TENSORFLOW,
        image="tf:2",
        command="python t.py",
        roles=roles,
    )

    v2 = v2_from_v1(spec.to_v1_body(), roles=roles)

    assert v2["jobType"] == "TFJob"
    assert set(v2["jobSpec"]) == {"Chief", "Worker"}
    assert v2["jobSpec"]["Worker"] == {
        "image": "tf:2",
        "replicas": 2,
        "resources": [{"name": "nvidia.com/gpu", "quantity": 2}],
    }
    back = v1_from_v2(v2)
    assert back["jobFramework"] == "TFJob" and back["jobSpec"]["replicas"] == 3


def test_a_tensorflow_jobs_shared_memory_goes_with_every_role():
    roles = [S.Role("chief", 1, "nvidia.com/gpu", 1), S.Role("ps", 1)]
    spec = S.JobSpec(
        name="tf",
        resource_pool_id="p",
        framework=S.TENSORFLOW,
        image="tf:2",
        command="python t.py",
        roles=roles,
        shared_memory_gi=32,
    )

    v2 = v2_from_v1(spec.to_v1_body(), roles=roles)

    assert v2["jobSpec"]["Chief"]["resources"] == [
        {"name": "nvidia.com/gpu", "quantity": 1},
        {"name": "sharedMemory", "quantity": 32},
    ]
    assert v2["jobSpec"]["PS"]["resources"] == [{"name": "sharedMemory", "quantity": 32}]
