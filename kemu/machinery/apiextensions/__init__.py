"""apiextensions.k8s.io: CustomResourceDefinitions and their custom resources (upstream
staging/src/k8s.io/apiextensions-apiserver). `crd` reads, validates and names a CRD; `schema`
validates, defaults and prunes a custom resource by its structural schema; `cel` evaluates
x-kubernetes-validations; `custom` is a custom resource's strategy."""
