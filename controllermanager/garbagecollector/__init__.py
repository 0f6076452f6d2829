"""The garbage collector (upstream pkg/controller/garbagecollector): graph.py holds the graph of
owners and dependents, graph_builder.py keeps it from informer events, garbagecollector.py is
the controller that deletes, orphans and finalizes, operations.py its reads and writes of the
objects (upstream's operations.go and patch.go)."""
