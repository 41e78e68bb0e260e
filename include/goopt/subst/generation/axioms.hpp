#pragma once
/// @file
/// @brief The operator axioms substitution rules are proven from, stated once: each entry has a
/// name, its statement in the rule grammar (rule.hpp) with pattern variables, and the code that
/// applies it to an e-graph. TASO (SOSP'19) Table 2 and its supplementary list, for goopt's
/// semantics of the TASO operator set (interp/kernels.hpp).
///
/// Each axiom is applied at e-nodes of its root kinds: it looks at the nodes of the children's
/// classes, and for every match asks for a term (the other side) to be added and joined with the
/// matched class. Directions: both wherever the other side does not invent structure out of nothing
/// (x = transpose(transpose(x)) would grow the e-graph without bound; identity constants and
/// split-of-concat are applied only in the simplifying direction, which suffices because both
/// sides of a rule are in the e-graph). Conditions on shapes and attributes are checked on the
/// class shapes and attribute maps before anything is added.

///
/// The axioms' code: axioms_algebra.hpp and axioms_concat_conv.hpp; what an axiom is: axiom.hpp.

#include <goopt/ops/op_kind.hpp>
#include <goopt/subst/generation/axiom.hpp>
#include <goopt/subst/generation/axioms_algebra.hpp>
#include <goopt/subst/generation/axioms_concat_conv.hpp>

#include <array>
#include <cstddef>
#include <string_view>

namespace goopt::subst {
inline namespace generation {

/// The axioms, each stated once. Pattern variables: x, y, z, u tensors, s, t scalars, w, v kernels.
inline constexpr std::array axioms{
    axiom{"ewadd-comm", "ewadd(x,y) = ewadd(y,x)", kinds_mask({ops::op_kind::ewadd}), detail::commute},
    axiom{"ewadd-assoc", "ewadd(ewadd(x,y),z) = ewadd(x,ewadd(y,z))", kinds_mask({ops::op_kind::ewadd}),
          detail::ewadd_assoc},
    axiom{"ewmul-comm", "ewmul(x,y) = ewmul(y,x)", kinds_mask({ops::op_kind::ewmul}), detail::commute},
    axiom{"ewmul-assoc", "ewmul(ewmul(x,y),z) = ewmul(x,ewmul(y,z))", kinds_mask({ops::op_kind::ewmul}),
          detail::ewadd_assoc},
    axiom{"ewmul-distrib", "ewmul(ewadd(x,y),z) = ewadd(ewmul(x,z),ewmul(y,z))",
          kinds_mask({ops::op_kind::ewmul, ops::op_kind::ewadd}), detail::ewmul_distrib},
    axiom{"ewmul-one", "ewmul(x,const_one) = x when const_one has x's shape", kinds_mask({ops::op_kind::ewmul}),
          detail::ewmul_one},
    axiom{"smul-assoc", "smul(smul(x,s),t) = smul(x,smul(s,t))", kinds_mask({ops::op_kind::smul}), detail::smul_assoc},
    axiom{"smul-scalar-comm", "smul(s,t) = smul(t,s) when s and t are scalars of one shape",
          kinds_mask({ops::op_kind::smul}), detail::smul_scalar_comm},
    axiom{"smul-distrib",
          "smul(ewadd(x,y),s) = ewadd(smul(x,s),smul(y,s)), smul(x,ewadd(s,t)) = ewadd(smul(x,s),smul(x,t)) "
          "when the summands have one shape",
          kinds_mask({ops::op_kind::smul, ops::op_kind::ewadd}), detail::smul_distrib},
    axiom{"smul-ewmul", "ewmul(smul(x,s),y) = smul(ewmul(x,y),s)",
          kinds_mask({ops::op_kind::ewmul, ops::op_kind::smul}), detail::smul_ewmul},
    axiom{"smul-matmul", "matmul(smul(x,s),y) = smul(matmul(x,y),s) = matmul(x,smul(y,s)) when activation=none",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::smul}), detail::smul_matmul},
    axiom{"smul-conv2d", "conv2d(smul(x,s),w) = smul(conv2d(x,w),s) = conv2d(x,smul(w,s)) when activation=none",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::smul}), detail::smul_conv2d},
    axiom{"smul-transpose", "transpose(smul(x,s)) = smul(transpose(x),s)",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::smul}), detail::smul_transpose},
    axiom{"smul-avgpool2d", "avgpool2d(smul(x,s)) = smul(avgpool2d(x),s) when activation=none",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::smul}), detail::smul_avgpool},
    axiom{"transpose-involution", "transpose{perm=p}(transpose{perm=q}(x)) = x when q after p is the identity",
          kinds_mask({ops::op_kind::transpose}), detail::transpose_involution},
    axiom{"transpose-ewadd", "transpose(ewadd(x,y)) = ewadd(transpose(x),transpose(y)) when x and y have one shape",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::ewadd}), detail::transpose_ewadd},
    axiom{"transpose-ewmul", "transpose(ewmul(x,y)) = ewmul(transpose(x),transpose(y)) when x and y have one shape",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::ewmul}), detail::transpose_ewmul},
    axiom{"transpose-relu", "transpose(relu(x)) = relu(transpose(x))",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::relu}), detail::transpose_relu},
    axiom{"transpose-matmul", "transpose(matmul(x,y)) = matmul(transpose(y),transpose(x)) when x, y are matrices",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::matmul}), detail::transpose_matmul},
    axiom{"transpose-concat",
          "transpose{perm=p}(concat{axis=p[j]}(x,y)) = concat{axis=j}(transpose{perm=p}(x),transpose{perm=p}(y))",
          kinds_mask({ops::op_kind::transpose, ops::op_kind::concat}), detail::transpose_concat},
    axiom{"transpose-const",
          "transpose(const_imm) = const_imm, transpose(const_one) = const_one of the transposed shape",
          kinds_mask({ops::op_kind::transpose}), detail::transpose_const},
    axiom{"matmul-assoc", "matmul(matmul(x,y),z) = matmul(x,matmul(y,z)) when activation=none",
          kinds_mask({ops::op_kind::matmul}), detail::matmul_assoc},
    axiom{"matmul-linear",
          "matmul(ewadd(x,y),z) = ewadd(matmul(x,z),matmul(y,z)), likewise in the second input, when activation=none",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::ewadd}), detail::matmul_linear},
    axiom{"matmul-activation", "matmul{activation=f}(x,y) = f(matmul(x,y)) for f relu, sigmoid, tanh, gelu",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::relu, ops::op_kind::sigmoid, ops::op_kind::tanh,
                      ops::op_kind::gelu}),
          detail::matmul_activation},
    axiom{"matmul-imm", "matmul(x,const_imm) = x = matmul(const_imm,x) when activation=none",
          kinds_mask({ops::op_kind::matmul}), detail::matmul_imm},
    axiom{"matmul-concat-outer",
          "matmul(concat{axis=-2}(x,y),z) = concat{axis=-2}(matmul(x,z),matmul(y,z)), matmul(x,concat{axis=-1}(y,z)) = "
          "concat{axis=-1}(matmul(x,y),matmul(x,z)), batched or not (rows and columns count from the end)",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::concat}), detail::matmul_concat_outer},
    axiom{"matmul-concat-inner",
          "matmul(concat{axis=1}(x,y),concat{axis=0}(z,u)) = ewadd(matmul(x,z),matmul(y,u)) when x has z's rows as "
          "columns, matrices, activation=none",
          kinds_mask({ops::op_kind::matmul, ops::op_kind::ewadd}), detail::matmul_concat_inner},
    axiom{"conv2d-linear",
          "conv2d(ewadd(x,y),w) = ewadd(conv2d(x,w),conv2d(y,w)), likewise in the kernel, when activation=none",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::ewadd}), detail::conv2d_linear},
    axiom{"conv2d-activation", "conv2d{activation=f}(x,w) = f(conv2d(x,w)) for f relu, sigmoid, tanh, gelu",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::relu, ops::op_kind::sigmoid, ops::op_kind::tanh,
                      ops::op_kind::gelu}),
          detail::conv2d_activation},
    axiom{"conv2d-concat-out", "conv2d(x,concat{axis=0}(w,v)) = concat{axis=1}(conv2d(x,w),conv2d(x,v)) when groups=1",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::concat}), detail::conv2d_concat_out},
    axiom{"conv2d-concat-in",
          "conv2d(concat{axis=1}(x,y),concat{axis=1}(w,v)) = ewadd(conv2d(x,w),conv2d(y,v)) when groups=1, "
          "activation=none",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::ewadd}), detail::conv2d_concat_in},
    axiom{"conv2d-concat-batch", "conv2d(concat{axis=0}(x,y),w) = concat{axis=0}(conv2d(x,w),conv2d(y,w))",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::concat}), detail::conv2d_concat_batch},
    axiom{"conv2d-enlarge", "conv2d(x,enlarge(w)) = conv2d(x,w) when stride=[1,1], padding=same, dilation=[1,1]",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_enlarge},
    axiom{"conv2d-iconv",
          "conv2d(x,const_iconv) = x when stride=[1,1], padding=same, dilation=[1,1], activation=none, groups=1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv},
    axiom{"conv2d-pointwise-padding", "conv2d{padding=same}(x,w) = conv2d{padding=valid}(x,w) when w is 1x1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_pointwise_padding},
    axiom{"conv2d-pointwise-avgpool2d",
          "avgpool2d(conv2d(x,w)) = conv2d(avgpool2d(x),w) when w is 1x1, stride=[1,1], groups=1, activation=none on "
          "both",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::conv2d}), detail::conv2d_pointwise_avgpool},
    axiom{"concat-interchange",
          "concat{axis=a}(concat{axis=b}(x,y),concat{axis=b}(z,u)) = "
          "concat{axis=b}(concat{axis=a}(x,z),concat{axis=a}(y,u)) "
          "when a != b and x, z have one extent along b",
          kinds_mask({ops::op_kind::concat}), detail::concat_interchange},
    axiom{
        "conv2d-stride-inward",
        "conv2d{stride=s}(conv2d{padding=valid}(x,w),v) = conv2d(conv2d{stride=s,padding=valid}(x,w),v) when v is 1x1, "
        "dilation=[1,1] on the outer, stride=[1,1] on the inner",
        kinds_mask({ops::op_kind::conv2d}), detail::conv2d_stride_inward},
    axiom{"ewmul-scalar", "ewmul(s,t) = smul(s,t) when s and t are scalars of one shape",
          kinds_mask({ops::op_kind::ewmul}), detail::ewmul_scalar},
    axiom{"conv2d-concat-groups",
          "conv2d(concat{axis=1}(x,y),concat{axis=0}(w,v)) = concat{axis=1}(conv2d(x,w),conv2d(y,v)) when the groups "
          "fall "
          "whole into x, y and w, v",
          kinds_mask({ops::op_kind::conv2d, ops::op_kind::concat}), detail::conv2d_concat_groups},
    axiom{"conv2d-iconv-crop",
          "conv2d{padding=p,stride=s}(conv2d{padding=same}(x,w),const_iconv) = conv2d{padding=p,stride=s}(x,w), "
          "conv2d{padding=p,stride=s}(avgpool2d{padding=same}(x),const_iconv) = avgpool2d{padding=p,stride=s}(x) when "
          "the "
          "inner op has stride=[1,1] and the window size of const_iconv (w enlarged to it), groups=1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv_crop},
    axiom{"conv2d-iconv-relu", "conv2d(relu(x),const_iconv) = conv2d{activation=relu}(x,const_iconv) when groups=1",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv_relu},
    axiom{"conv2d-iconv-pointwise",
          "conv2d{stride=s}(conv2d{padding=p,stride=t}(x,const_iconv),w) = conv2d{padding=p,stride=s*t}(x,enlarge(w)) "
          "when w "
          "is 1x1, groups=1, inner activation=none, and s=[1,1] when p=same",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_iconv_pointwise},
    axiom{
        "conv2d-enlarged-pointwise",
        "conv2d{padding=p,stride=t}(x,enlarge(w)) = conv2d(conv2d{padding=p,stride=t}(x,const_iconv),w) when w is 1x1, "
        "groups=1, dilation=[1,1] (conv2d-iconv-pointwise the other way)",
        kinds_mask({ops::op_kind::conv2d}), detail::conv2d_enlarged_pointwise},
    axiom{"conv2d-stride-elementwise",
          "conv2d{stride=s}(f(conv2d{padding=valid}(x,w),conv2d{padding=valid}(y,u)),v) = "
          "conv2d(f(conv2d{stride=s,padding=valid}(x,w),conv2d{stride=s,padding=valid}(y,u)),v) for f ewadd, ewmul "
          "(likewise relu of one conv) when v is 1x1, dilation=[1,1] on the outer, stride=[1,1] on the inner",
          kinds_mask({ops::op_kind::conv2d}), detail::conv2d_stride_elementwise},
    axiom{"enlarge-elementwise",
          "ewadd(enlarge(w),enlarge(v)) = enlarge(ewadd(w,v)), likewise ewmul, smul(enlarge(w),s) = enlarge(smul(w,s))",
          kinds_mask({ops::op_kind::enlarge, ops::op_kind::ewadd, ops::op_kind::ewmul, ops::op_kind::smul}),
          detail::enlarge_elementwise},
    axiom{"avgpool2d-as-conv2d",
          "avgpool2d{kernel=k,padding=valid}(x) = conv2d{padding=valid}(x,const_pool{shape=[C,1,k]}) "
          "(not when padding=same: the average excludes padded cells)",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::conv2d}), detail::pool_as_conv},
    axiom{"pool2d-identity", "pool{kernel=[1,1],stride=[1,1]}(x) = x for avgpool2d, maxpool2d when activation=none",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::maxpool2d}), detail::pool2d_identity},
    axiom{"avgpool2d-linear", "avgpool2d(ewadd(x,y)) = ewadd(avgpool2d(x),avgpool2d(y)) when activation=none",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::ewadd}), detail::avgpool_linear},
    axiom{"avgpool2d-concat",
          "avgpool2d(concat{axis=a}(x,y)) = concat{axis=a}(avgpool2d(x),avgpool2d(y)) when a is 0 or 1",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::concat}), detail::avgpool_concat},
    axiom{"relu-idempotent", "relu(relu(x)) = relu(x)", kinds_mask({ops::op_kind::relu}), detail::relu_idempotent},
    axiom{"relu-split", "split{axis=a}(relu(x))#i = relu(split{axis=a}(x)#i)", kinds_mask({ops::op_kind::split}),
          detail::relu_split},
    axiom{"relu-nonnegative-pool", "relu(pool(relu(x))) = pool(relu(x)) for avgpool2d, maxpool2d with activation=none",
          kinds_mask({ops::op_kind::relu}), detail::relu_nonnegative_pool},
    axiom{"relu-concat", "relu(concat(x,y)) = concat(relu(x),relu(y))",
          kinds_mask({ops::op_kind::relu, ops::op_kind::concat}), detail::relu_concat},
    axiom{"activation-concat", "f(concat(x,y)) = concat(f(x),f(y)) for f sigmoid, tanh, gelu",
          kinds_mask({ops::op_kind::sigmoid, ops::op_kind::tanh, ops::op_kind::gelu, ops::op_kind::concat}),
          detail::activation_concat},
    axiom{"smul-concat", "smul(concat(x,y),s) = concat(smul(x,s),smul(y,s))",
          kinds_mask({ops::op_kind::smul, ops::op_kind::concat}), detail::smul_concat},
    axiom{"ewadd-concat", "ewadd(concat(x,y),concat(z,u)) = concat(ewadd(x,z),ewadd(y,u)) when x and z have one shape",
          kinds_mask({ops::op_kind::ewadd, ops::op_kind::concat}), detail::ewadd_concat},
    axiom{"ewmul-concat", "ewmul(concat(x,y),concat(z,u)) = concat(ewmul(x,z),ewmul(y,u)) when x and z have one shape",
          kinds_mask({ops::op_kind::ewmul, ops::op_kind::concat}), detail::ewmul_concat},
    axiom{"concat-assoc", "concat(concat(x,y),z) = concat(x,concat(y,z))", kinds_mask({ops::op_kind::concat}),
          detail::concat_assoc},
    axiom{
        "concat-nary",
        "concat{axis=a}(x_1,...,x_n) = concat{axis=a}(concat{axis=a}(x_1,...,x_n-1),x_n) for n >= 3, taken as a chain "
        "of binary concats; concat{axis=a-r}(x,y) = concat{axis=a}(x,y) for operands of rank r",
        kinds_mask({ops::op_kind::concat}), detail::concat_nary},
    axiom{"split-concat", "split{axis=a,sizes=[p,q]}(concat{axis=a}(x,y))#0 = x, #1 = y when x has p and y q along a",
          kinds_mask({ops::op_kind::split}), detail::split_concat},
    axiom{"concat-split", "concat{axis=a}(split{axis=a}(x)#0,split{axis=a}(x)#1) = x",
          kinds_mask({ops::op_kind::concat}), detail::concat_split},
    // the fused kernels and inference batchnorm (what TASO's built-in fusions and fold rest on)
    axiom{"conv2d_bias-activation",
          "conv2d_bias{activation=f}(x,w,c) = f(conv2d_bias(x,w,c)) for f relu, sigmoid, tanh, gelu",
          kinds_mask({ops::op_kind::conv2d_bias, ops::op_kind::relu, ops::op_kind::sigmoid, ops::op_kind::tanh,
                      ops::op_kind::gelu}),
          detail::conv2d_bias_activation},
    axiom{"pool2d-activation",
          "pool{activation=f}(x) = f(pool(x)) for avgpool2d, maxpool2d and f relu, sigmoid, tanh, gelu",
          kinds_mask({ops::op_kind::avgpool2d, ops::op_kind::maxpool2d, ops::op_kind::relu, ops::op_kind::sigmoid,
                      ops::op_kind::tanh, ops::op_kind::gelu}),
          detail::pool2d_activation},
    axiom{"matmul_bias-activation",
          "matmul_bias{activation=f}(x,y,c) = f(matmul_bias(x,y,c)) for f relu, sigmoid, tanh, gelu",
          kinds_mask({ops::op_kind::matmul_bias, ops::op_kind::relu, ops::op_kind::sigmoid, ops::op_kind::tanh,
                      ops::op_kind::gelu}),
          detail::matmul_bias_activation},
    axiom{"conv2d_bias-def", "conv2d_bias(x,w,c) = ewadd(conv2d(x,w),c) when activation=none",
          kinds_mask({ops::op_kind::conv2d_bias}), detail::conv2d_bias_definition},
    axiom{"matmul_bias-def", "matmul_bias(x,y,c) = ewadd(matmul(x,y),c) when activation=none",
          kinds_mask({ops::op_kind::matmul_bias}), detail::matmul_bias_definition},
    axiom{"batchnorm-affine",
          "batchnorm{epsilon=e}(x,s,b,m,v) = ewadd(ewmul(x,reshape{shape=[C,1,1]}(k)),"
          "reshape{shape=[C,1,1]}(sub(b,ewmul(m,k)))) with k = div(s,sqrt(ewadd(v,const_fill{shape=[1],value=e}()))) "
          "when x is [N,C,H,W] and s, b, m, v are [C]",
          kinds_mask({ops::op_kind::batchnorm}), detail::batchnorm_affine},
    axiom{"conv2d-channel-scale",
          "ewmul(conv2d(x,w),reshape{shape=[O,1,1]}(k)) = "
          "conv2d(x,transpose{perm=[3,0,1,2]}(ewmul(transpose{perm=[1,2,3,0]}(w),k))) when k is [O], activation=none",
          kinds_mask({ops::op_kind::ewmul}), detail::conv2d_channel_scale},
};

/// The index of the axiom named `name`; axioms.size() when there is none.
constexpr std::size_t find_axiom(std::string_view name) noexcept {
    for (std::size_t i = 0; i < axioms.size(); ++i)
        if (axioms[i].name == name) return i;
    return axioms.size();
}

}  // namespace generation

namespace detail {
consteval bool axiom_names_unique() {
    for (std::size_t i = 0; i < axioms.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (axioms[i].name == axioms[j].name) return false;
    return true;
}
static_assert(axiom_names_unique(), "two axioms share a name");
}  // namespace detail

inline namespace generation {}  // namespace generation
}  // namespace goopt::subst
