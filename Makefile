# Thin aliases for the nox sessions (noxfile.py holds the logic).
#   make quickstart                  build the image for this host, run `bench suite quick`
#   make images                      build every image this machine can build
#   make image IMAGE=cuda            build one
#   make run IMAGE=cuda ARGS="resnet50 --batch-size 64"
#   make test | lint | lock IMAGE=cuda | collect | save IMAGE=cuda | vendor IMAGE=cuda
#   make rerun FILE=results/OLD.json  rerun a result in the image it names
# Default: the image for this host (cuda, rocm or xeon: images/common/host-image.sh).
IMAGE ?= $(shell sh images/common/host-image.sh)
ARGS ?= list
CI_IMAGES ?= cuda xeon xeon-ipex tpu tpu-jax

.PHONY: quickstart test lint images image lock run smoke collect save vendor rerun base need-nox

# Every target runs nox sessions: without nox, one line says how to get it.
need-nox:
	@command -v nox > /dev/null 2>&1 || { echo "make: nox is not installed (every target runs a nox session): pip install 'nox[uv]'" >&2; exit 1; }

# nox -s build finds out what this machine reaches (a registry, the Debian snapshot, a TLS
# proxy) and says in one line what it chose; each failure is one line saying what to do.
quickstart: need-nox
	@if [ "$(IMAGE)" = native ]; then \
		echo "no bench image for this OS: pip install '.[torch]' && bench suite quick"; exit 1; fi
	nox -s "build(image='$(IMAGE)')"
	nox -s "run(image='$(IMAGE)')" -- suite quick
test: need-nox
	nox -s tests
lint: need-nox
	nox -s lint
base: need-nox
	nox -s base
images: need-nox
	for image in $(CI_IMAGES); do nox -s "build(image='$$image')" || exit 1; done
image: need-nox
	nox -s "build(image='$(IMAGE)')"
lock: need-nox
	nox -s "lock(image='$(IMAGE)')"
run: need-nox
	nox -s "run(image='$(IMAGE)')" -- $(ARGS)
smoke: need-nox
	nox -s "smoke(image='$(IMAGE)')"
collect: need-nox
	nox -s collect
save: need-nox
	nox -s "save(image='$(IMAGE)')"
vendor: need-nox
	nox -s "vendor(image='$(IMAGE)')"
rerun: need-nox
	nox -s rerun -- $(FILE)
