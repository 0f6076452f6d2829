"""`make run`: the local cluster of the repository's Procfile under honcho (`python -m
kemu.makerun`, which the Makefile's run target runs): its ports (`ports`: the one table), the
files it writes under `.kemu/`, and the guard that keeps etcd up until the apiserver is gone
(`guard`)."""
