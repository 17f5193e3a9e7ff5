#!/usr/bin/env bash
# GRPO with verl on web episodes from a WebServ fleet (verl's agent loop "webserv").
#
# On the Ray cluster verl will use (every node has `pip install 'webserv[ray]'` and the
# webserv binary on its PATH or in WEBSERV_BIN):
#
#   python -c 'import ray, webserv.ray as wr; ray.init(address="auto"); wr.Fleet.start("webserv", cpus_per_server=4)'
#   python python/examples/verl/make_dataset.py --out ~/data/webserv
#   bash python/examples/verl/run_grpo.sh Qwen/Qwen2.5-3B-Instruct
#
# Every AgentLoopWorker loads the loop from the agent loop config shipped in the package
# (name: webserv, fleet: webserv, site: shopping); rows with agent_name "webserv" run it.
# rollout.n members of a row share its uid, so they start from one snapshot on one server.
set -euo pipefail
model=${1:?model path or name}
data=${DATA:-$HOME/data/webserv}
loop_config=$(python -c 'import webserv.ray.verl as v; print(v.AGENT_LOOP_CONFIG)')

python -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$data/train.parquet" \
  data.val_files="$data/test.parquet" \
  data.return_raw_chat=True \
  data.train_batch_size=16 \
  data.max_prompt_length=8192 \
  data.max_response_length=8192 \
  actor_rollout_ref.model.path="$model" \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=10 \
  actor_rollout_ref.rollout.agent.num_workers=4 \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$loop_config" \
  actor_rollout_ref.rollout.agent.default_agent_loop=webserv \
  trainer.total_epochs=1 \
  "${@:2}"
