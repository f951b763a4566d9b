"""The verbs that advise before or after a run: doctor, probe, plan, rewards try, the machine's GPUs. They read
projects through the core, may render one through the scaffold, and never write a user's files."""
