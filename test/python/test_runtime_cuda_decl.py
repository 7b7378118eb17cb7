"""A hand-edited source's extern "C" __global__ declaration, checked against the kernel's signature."""

import pytest

from tilemlir.diagnostics import CompileError
from tilemlir.runtime.cuda_decl import check_declaration
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

SIGNATURE = KernelSignature(
    name="kernel",
    params=(TensorParam("X", "bfloat16", ("M", 64), written=False), TensorParam("Y", "uint32", ("M",)),
            ScalarParam("eps", "float32"), ScalarParam("flag", "bool")),
    symbols=("M",), grid=("M", "1", "1"), block=(64, 1, 1), cuda_params=("X", "Y", "eps", "flag", "M"))
BODY = " {\n  Y[blockIdx.x] = 0;\n}\n"
GENERATED = ('extern "C" __global__ void __launch_bounds__(64) kernel(const __nv_bfloat16* __restrict__ X, '
             'unsigned int* __restrict__ Y, float eps, bool flag, long long M)' + BODY)


@pytest.mark.parametrize("source", [
    GENERATED,
    GENERATED.replace("unsigned int*", "int*").replace("bool flag", "unsigned char flag"),  # integers by size
    GENERATED.replace("const __nv_bfloat16* __restrict__ X", "__nv_bfloat16 const *x"),  # names are free
    GENERATED.replace("const __nv_bfloat16*", "const uint4*").replace("unsigned int*", "void*"),  # vectors, void
    GENERATED.replace("long long M", "int64_t M").replace("float eps", "float /* epsilon, ) */ eps"),
    'extern "C" {\n__global__ void kernel(const __nv_bfloat16*, unsigned*, float, bool, long)' + BODY + "}\n",
    '#include <cuda_bf16.h>\nextern "C" __global__ void kernel(const __nv_bfloat16* X, unsigned* Y, float e,\n'
    '    bool f, long long M);\n// kernel(int) in a comment\nextern "C" __global__ void\nkernel(\n'
    '    const __nv_bfloat16* X, unsigned* Y, float e, bool f, long long M)' + BODY
    + '__device__ void helper() { const char* s = "kernel(1)"; }\n',
], ids=["generated", "integer sizes", "names", "vector and void pointers", "typedef and comment", "extern block",
        "prototype, comments, strings"])
def test_declarations_with_the_signature_abi_are_accepted(source):
    check_declaration(source, SIGNATURE, "the source")


@pytest.mark.parametrize("edit, message", [
    (("float eps, ", ""), r"it declares 4 parameters, the signature has 5"),
    (("float eps", "double eps"), r"parameter 3 is the float32 scalar eps \(`float eps`\), declared `double eps`: "
                                  r"another type"),
    (("long long M", "int M"), r"parameter 5 is the symbol M \(`long long M`\), declared `int M`: another type"),
    (("const __nv_bfloat16*", "const half*"), r"parameter 1 is the bfloat16 tensor X .*declared `const half\* "
                                              r"__restrict__ X`: another type"),
    (("unsigned int* __restrict__ Y", "unsigned int Y"), r"parameter 2 is the uint32 tensor Y .*: not a pointer"),
    (("float eps", "float* eps"), r"parameter 3 .*: a pointer"),
    (("float eps, bool flag", "bool flag, float eps"), r"parameter 3 is the float32 scalar eps .*: another type"),
    (("unsigned int* __restrict__ Y", "unsigned short* Y"), r"parameter 2 is the uint32 tensor Y .*: another type"),
])
def test_a_parameter_list_unlike_the_signature_is_an_error_naming_both(edit, message):
    with pytest.raises(CompileError, match=message) as error:
        check_declaration(GENERATED.replace(*edit), SIGNATURE, "the edited file k.cu")
    text = str(error.value)
    assert text.startswith('error: the edited file k.cu: the parameters of extern "C" __global__ kernel do not match')
    assert "  the signature: (const __nv_bfloat16* X, unsigned int* Y, float eps, bool flag, long long M)" in text
    assert f"  the source:    ({GENERATED.replace(*edit).split('kernel(')[1].split(')')[0]})" in text


def test_a_kernel_under_another_name_or_without_c_linkage_is_an_error():
    with pytest.raises(CompileError, match=r'the source declares no extern "C" __global__ function kernel'):
        check_declaration(GENERATED.replace("kernel(", "kernel2("), SIGNATURE, "the source")
    with pytest.raises(CompileError, match=r"declares __global__ kernel without extern \"C\": its symbol name is "
                                           r"mangled"):
        check_declaration(GENERATED.replace('extern "C" ', ""), SIGNATURE, "the source")
    with pytest.raises(CompileError, match="declares no extern"):
        check_declaration("// " + GENERATED, SIGNATURE, "the source")


def test_every_declaration_is_checked():
    prototype = 'extern "C" __global__ void kernel(const __nv_bfloat16* X, unsigned* Y, float e, bool f, int M);\n'
    with pytest.raises(CompileError, match="parameter 5 is the symbol M"):
        check_declaration(prototype + GENERATED, SIGNATURE, "the source")


def test_a_32_bit_index_kernel_takes_int_symbols():
    narrow = KernelSignature.from_dict(dict(SIGNATURE.to_dict(), index_bits=32))
    check_declaration(GENERATED.replace("long long M", "int M"), narrow, "the source")
    with pytest.raises(CompileError, match=r"the symbol M \(`int M`\), declared `long long M`"):
        check_declaration(GENERATED, narrow, "the source")
