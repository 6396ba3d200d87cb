"""The conversation runtime: the state machine, the conversation that ties hearing,
the agent and speaking together, per-turn metrics, and the daemon around them."""
