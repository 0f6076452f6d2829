"""API validation, after k8s.io/kubernetes/pkg/apis/*/validation and apimachinery's util/validation.

Every check returns a list of `Cause`s: `field` is the upstream field path
(spec.containers[0].resources.requests[cpu]) and `message` is the body upstream's field.Error
prints after the path (`Invalid value: "-1": must be greater than or equal to 0`,
`Required value`, `Unsupported value: "X": supported values: "A", "B"`, `Duplicate value: "c"`,
`Forbidden: ...`). The apiserver turns a non-empty list into `Invalid.from_causes(...)`.

`objects.validate_object(obj, old=...)` validates one object of any kind and
`objects.validate_status_update(obj, old)` a status subresource write. This `__init__` imports
nothing: `names` (apimachinery's util/validation) is a leaf that kemu.machinery.labels builds
on, and the kinds' validators build on labels; a package that loaded them all on import would
close that circle.

Defaulting is not done here: an object is valid with fields left empty that upstream defaults
(restartPolicy, preemptionPolicy). Namespaced kinds need metadata.namespace: the apiserver fills
it from the request before validating. A name may be empty when generateName is set: the
apiserver generates the name.
"""
