"""Adapters for RL trainers: ``webserv.integrations.trl`` and ``webserv.integrations.verl``.

Neither imports its trainer: they have the shapes the trainers call, so they
load (and are tested) without them.
"""
