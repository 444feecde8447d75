"""The command line and the container that wires adapters to ports."""
