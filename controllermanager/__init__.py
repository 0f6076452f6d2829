"""kube-controller-manager (python -m controllermanager): one module per controller.

app.py is the process (flags, leader election, the CONTROLLERS registry), controller.py the
contract between the manager and a controller (work queues are kemu.client.workqueue), and
disruption.py the disruption controller.
"""
