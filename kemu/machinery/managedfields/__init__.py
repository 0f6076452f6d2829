"""Server-side apply's field management (issue #57 item 2), as sigs.k8s.io/structured-merge-diff
and k8s.io/apimachinery pkg/util/managedfields: field sets (`fieldpath`), a kind's schema as
structured-merge-diff reads it (`schema`), field sets of objects, their comparison, merge and
removal (`typed`), the apply and update algorithms (`updater`) and the managedFields entries of
an object (`entries`). Pure: no I/O."""
