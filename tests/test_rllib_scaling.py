"""The RLlib trainer's scaling estimate (``python -m training.rllib.scaling``): the arithmetic
of a synchronous iteration over N nodes, and the command line's refusals. Needs no Ray (the
measurement itself runs in ``docs/rllib-cluster.md``'s command)."""

from __future__ import annotations

import pytest

from training.rllib.scaling import NODES, estimate, main


def test_the_learner_is_the_bottleneck_from_the_runner_count_where_sampling_a_batch_takes_as_long_as_the_update():
    batch, rate, update, sync = 4096, 512.0, 0.5, 0.1
    est = estimate(batch, rate, update, sync, runners_per_node=4)
    # 4096 / (512 * 0.5) = 16 runners sample a batch in 0.5 s, the update's time: 4 nodes of 4
    assert est["learner_bound_from_runners"] == 16 and est["learner_bound_from_nodes"] == 4
    at = {row["nodes"]: row for row in est["rows"]}
    assert at[4]["sample_s"] == pytest.approx(update)
    assert at[2]["sample_s"] > update > at[8]["sample_s"]
    assert at[4]["learner_share"] == pytest.approx((update + sync) / (2 * update + sync), abs=1e-3)


def test_more_nodes_never_pass_the_ceiling_of_one_batch_per_update_and_sync():
    est = estimate(4096, 300.0, 1.2, 0.05, runners_per_node=15)
    rates = [row["env_steps_per_s"] for row in est["rows"]]
    assert [row["nodes"] for row in est["rows"]] == list(NODES)
    assert rates == sorted(rates) and rates[-1] < est["ceiling_env_steps_per_s"] == pytest.approx(4096 / 1.25, abs=0.1)
    one = est["rows"][0]
    assert one["iteration_s"] == pytest.approx(4096 / (15 * 300.0) + 1.25, abs=1e-3)


@pytest.mark.parametrize(("args", "named"), [(["--updates", "0"], "--updates must be from 1 to 100, got 0"),
                                             (["--seconds", "0"], "--seconds must be from 1 to 3600, got 0"),
                                             (["--runners-per-node", "0"], "--runners-per-node must be from 1")])
def test_bad_arguments_are_refused_naming_the_option_and_the_range(args, named, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2 and named in capsys.readouterr().err


def test_a_bad_recipe_key_is_refused_before_ray_starts(capsys):
    assert main(["--set", "ppo.train_batch=0"]) == 2
    assert "ppo.train_batch must be >= 1" in capsys.readouterr().err
