"""The operating system around the daemon: systemd notify, board statistics, giving heap
memory back, logging set-up."""
