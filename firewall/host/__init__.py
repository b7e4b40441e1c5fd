"""What a host runs: the Firewall, the agent-facing session and its channels, config, the demo,
the in-process guard, the MCP proxy and memory server, sentinels and the bulk jobs."""
