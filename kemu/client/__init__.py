"""kemu's client side: the typed gRPC client (client), informers (informer), leader election
(leaderelection), identity leases (identity), events (events), the work queue (workqueue), what
the scheduler and controller-manager share (controlplane), and the fake client for unit tests
(fake).

Import the submodules directly: this package re-exports nothing, so importing one of them (the
work queue, the ApiClient protocol in interface) does not load gRPC.
"""
