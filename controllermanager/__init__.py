"""kube-controller-manager (python -m controllermanager): one module per controller.

app.py is the process (flags, leader election, the CONTROLLERS registry), controller.py the
contract between the manager and a controller, workqueue.py client-go's work queue, and
disruption.py the disruption controller.
"""
