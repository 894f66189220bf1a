"""The runtime: executes compiled plans. It must never need xDSL to run one;
the compiler hands it plain data (`plan.Plan`)."""
