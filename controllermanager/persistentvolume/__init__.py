"""The PersistentVolume controller (upstream pkg/controller/volume/persistentvolume) and kemu's
simulated CSI provisioner."""
