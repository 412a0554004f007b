"""Imitation of a teacher: ``record`` (its decisions), ``demonstrations`` (the recorded
decisions and their file), ``fit`` (a policy fitted to them). Imports ``training.common``
only; the SB3 trainer uses it as a warm start, ``python -m training.imitate`` on its own.

Optional warm start before reinforcement learning: imitate a teacher bot.

With ``pretrain.teacher`` set (e.g. ``heuristic``), a new run first records
``pretrain.games`` games in which the teacher plays every seat, then fits the policy
network to the teacher's decisions (cross-entropy over the legal actions) and the value
network to each decision's final reward (the run's ``env.reward``, as the environment
pays it). With ``pretrain.dagger_rounds = k``, k rounds of DAgger follow: the fitted
policy plays ``pretrain.dagger_games`` games (in every seat, or in one seat against the
teacher), the teacher labels every decision of them with what it would have played, and
the policy is fitted again on all decisions recorded so far, so that it learns to recover
from positions its own mistakes lead to. Reinforcement learning by self-play then starts
from that policy instead of from random weights; the rewards it learns from are unchanged.

Any agent spec can teach (``heuristic``, ``planner``, ``ismcts``, ``ppo:PATH``). A teacher
that gives the values behind its choice (``action_values(view)``: the planner's plan-model
values, the search's candidate scores, in points) teaches more than its move: with
``pretrain.soft_temperature = T > 0`` the target of a decision is ``softmax(value / T)``
over the actions it valued (the move it plays being the first of the highest), so the
policy also learns how much worse the other moves are. ``T`` is in the values' points: a
move 1 point worse than the best gets ``exp(-1/T)`` of its weight. With ``T = 0`` (or a
teacher without values) the target is the teacher's move alone. With ``pretrain.anchor``
reinforcement learning is then held near the imitation for a while (:mod:`training.sb3.distill`).
``pretrain.temperature`` < 1 sharpens the fitted policy first: an imitation's sampled moves
are much weaker than its most probable ones, and PPO improves the sampled policy.

The games are played by the match loop (:class:`keltis_env.core.match.Match`) of the
run's game (``env.game``, found in the registry), one recording controller per seat. The
observation and mask of a recorded decision are exactly what the learner environment gives
for that seat (the game's encoder on the seat's view).
"""
