# Checks written in Python that run as unit tests: each becomes an executable
# $(BUILD)/tests/unit/test_* wrapper, which tests/run_all.py runs and counts
# like the C unit binaries (their last line is "N passed, N failed").
# Included by the top Makefile; `make build-tests` (and so `make test`) makes them.
#   test_includes       every #include points down (tests/check_includes.py)
#   test_includes_self  the include check fails on bad edges (synthetic trees)
#   test_exports        every exported function has a user outside its file (tests/check_exports.py)
#   test_function_length       no function over 80 lines (tests/check_function_length.py)
#   test_function_length_self  that check fails on long ones (synthetic files)

PY_CHECKS := $(BUILD)/tests/unit/test_includes $(BUILD)/tests/unit/test_includes_self \
	$(BUILD)/tests/unit/test_exports $(BUILD)/tests/unit/test_function_length \
	$(BUILD)/tests/unit/test_function_length_self

# The wrappers name the script by absolute path, so they run from any folder.
$(BUILD)/tests/unit/test_includes: tests/check_includes.py tests/checks.mk
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec python3 %s "$$@"\n' '$(CURDIR)/tests/check_includes.py' > $@
	@chmod +x $@

$(BUILD)/tests/unit/test_includes_self: tests/check_includes.py tests/checks.mk
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec python3 %s --self-test "$$@"\n' '$(CURDIR)/tests/check_includes.py' > $@
	@chmod +x $@

# over this build's objects: a sanitizer build checks its own
$(BUILD)/tests/unit/test_exports: tests/check_exports.py tests/checks.mk
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec python3 %s --build %s "$$@"\n' '$(CURDIR)/tests/check_exports.py' '$(abspath $(BUILD))' > $@
	@chmod +x $@

$(BUILD)/tests/unit/test_function_length: tests/check_function_length.py tests/checks.mk
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec python3 %s "$$@"\n' '$(CURDIR)/tests/check_function_length.py' > $@
	@chmod +x $@

$(BUILD)/tests/unit/test_function_length_self: tests/check_function_length.py tests/checks.mk
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec python3 %s --self-test "$$@"\n' '$(CURDIR)/tests/check_function_length.py' > $@
	@chmod +x $@

build-tests: $(PY_CHECKS)
