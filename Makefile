# Thin aliases for the nox sessions (noxfile.py holds the logic).
#   make images                      build every image this machine can build
#   make image IMAGE=cuda            build one
#   make run IMAGE=cuda ARGS="resnet50 --batch-size 64"
#   make test | lint | lock IMAGE=cuda | collect | save IMAGE=cuda
IMAGE ?= cuda
ARGS ?= list
CI_IMAGES ?= cuda xeon tpu tpu-jax

.PHONY: test lint images image lock run smoke collect save base

test:
	nox -s tests
lint:
	nox -s lint
base:
	nox -s base
images:
	for image in $(CI_IMAGES); do nox -s "build(image='$$image')" || exit 1; done
image:
	nox -s "build(image='$(IMAGE)')"
lock:
	nox -s "lock(image='$(IMAGE)')"
run:
	nox -s "run(image='$(IMAGE)')" -- $(ARGS)
smoke:
	nox -s "smoke(image='$(IMAGE)')"
collect:
	nox -s collect
save:
	nox -s "save(image='$(IMAGE)')"
