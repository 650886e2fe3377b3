// every comparison predicate with each signedness / ordering, divi in every rounding and signedness, signed
// and unsigned maxi / mini / remi
cuda_tile.module @preds {
  entry @preds(%ap: tile<ptr<i32>>, %bp: tile<ptr<i32>>, %xp: tile<ptr<f32>>, %yp: tile<ptr<f32>>, %out: tile<ptr<i32>>, %n: tile<i32>) {
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %av = make_tensor_view %ap, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xi32, strides=[1]>
    %bv = make_tensor_view %bp, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xi32, strides=[1]>
    %xv = make_tensor_view %xp, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
    %yv = make_tensor_view %yp, shape = [%n], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
    %pa = make_partition_view %av : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>
    %pb = make_partition_view %bv : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>
    %px = make_partition_view %xv : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>
    %py = make_partition_view %yv : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>
    %a, %t1 = load_view_tko weak %pa[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>, tile<i32> -> tile<16xi32>, token
    %b, %t2 = load_view_tko weak %pb[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xi32, strides=[1]>>, tile<i32> -> tile<16xi32>, token
    %x, %t3 = load_view_tko weak %px[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %y, %t4 = load_view_tko weak %py[%bid] : partition_view<tile=(16), padding_value = zero, tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
    %ones = constant <i32: 1> : tile<16xi32>
    %b1 = ori %b, %ones : tile<16xi32>
    %vo = make_tensor_view %out, shape = [35, %n], strides = [%n, 1] : tile<i32> -> tensor_view<35x?xi32, strides=[?,1]>
    %po = make_partition_view %vo : partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>
    %ci_equal_signed = cmpi equal %a, %b, signed : tile<16xi32> -> tile<16xi1>
    %e0 = exti %ci_equal_signed unsigned : tile<16xi1> -> tile<16xi32>
    %o0 = reshape %e0 : tile<16xi32> -> tile<1x16xi32>
    %k0 = constant <i32: 0> : tile<i32>
    %w0 = store_view_tko weak %o0, %po[%k0, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_equal_unsigned = cmpi equal %a, %b, unsigned : tile<16xi32> -> tile<16xi1>
    %e1 = exti %ci_equal_unsigned unsigned : tile<16xi1> -> tile<16xi32>
    %o1 = reshape %e1 : tile<16xi32> -> tile<1x16xi32>
    %k1 = constant <i32: 1> : tile<i32>
    %w1 = store_view_tko weak %o1, %po[%k1, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_not_equal_signed = cmpi not_equal %a, %b, signed : tile<16xi32> -> tile<16xi1>
    %e2 = exti %ci_not_equal_signed unsigned : tile<16xi1> -> tile<16xi32>
    %o2 = reshape %e2 : tile<16xi32> -> tile<1x16xi32>
    %k2 = constant <i32: 2> : tile<i32>
    %w2 = store_view_tko weak %o2, %po[%k2, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_not_equal_unsigned = cmpi not_equal %a, %b, unsigned : tile<16xi32> -> tile<16xi1>
    %e3 = exti %ci_not_equal_unsigned unsigned : tile<16xi1> -> tile<16xi32>
    %o3 = reshape %e3 : tile<16xi32> -> tile<1x16xi32>
    %k3 = constant <i32: 3> : tile<i32>
    %w3 = store_view_tko weak %o3, %po[%k3, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_less_than_signed = cmpi less_than %a, %b, signed : tile<16xi32> -> tile<16xi1>
    %e4 = exti %ci_less_than_signed unsigned : tile<16xi1> -> tile<16xi32>
    %o4 = reshape %e4 : tile<16xi32> -> tile<1x16xi32>
    %k4 = constant <i32: 4> : tile<i32>
    %w4 = store_view_tko weak %o4, %po[%k4, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_less_than_unsigned = cmpi less_than %a, %b, unsigned : tile<16xi32> -> tile<16xi1>
    %e5 = exti %ci_less_than_unsigned unsigned : tile<16xi1> -> tile<16xi32>
    %o5 = reshape %e5 : tile<16xi32> -> tile<1x16xi32>
    %k5 = constant <i32: 5> : tile<i32>
    %w5 = store_view_tko weak %o5, %po[%k5, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_less_than_or_equal_signed = cmpi less_than_or_equal %a, %b, signed : tile<16xi32> -> tile<16xi1>
    %e6 = exti %ci_less_than_or_equal_signed unsigned : tile<16xi1> -> tile<16xi32>
    %o6 = reshape %e6 : tile<16xi32> -> tile<1x16xi32>
    %k6 = constant <i32: 6> : tile<i32>
    %w6 = store_view_tko weak %o6, %po[%k6, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_less_than_or_equal_unsigned = cmpi less_than_or_equal %a, %b, unsigned : tile<16xi32> -> tile<16xi1>
    %e7 = exti %ci_less_than_or_equal_unsigned unsigned : tile<16xi1> -> tile<16xi32>
    %o7 = reshape %e7 : tile<16xi32> -> tile<1x16xi32>
    %k7 = constant <i32: 7> : tile<i32>
    %w7 = store_view_tko weak %o7, %po[%k7, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_greater_than_signed = cmpi greater_than %a, %b, signed : tile<16xi32> -> tile<16xi1>
    %e8 = exti %ci_greater_than_signed unsigned : tile<16xi1> -> tile<16xi32>
    %o8 = reshape %e8 : tile<16xi32> -> tile<1x16xi32>
    %k8 = constant <i32: 8> : tile<i32>
    %w8 = store_view_tko weak %o8, %po[%k8, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_greater_than_unsigned = cmpi greater_than %a, %b, unsigned : tile<16xi32> -> tile<16xi1>
    %e9 = exti %ci_greater_than_unsigned unsigned : tile<16xi1> -> tile<16xi32>
    %o9 = reshape %e9 : tile<16xi32> -> tile<1x16xi32>
    %k9 = constant <i32: 9> : tile<i32>
    %w9 = store_view_tko weak %o9, %po[%k9, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_greater_than_or_equal_signed = cmpi greater_than_or_equal %a, %b, signed : tile<16xi32> -> tile<16xi1>
    %e10 = exti %ci_greater_than_or_equal_signed unsigned : tile<16xi1> -> tile<16xi32>
    %o10 = reshape %e10 : tile<16xi32> -> tile<1x16xi32>
    %k10 = constant <i32: 10> : tile<i32>
    %w10 = store_view_tko weak %o10, %po[%k10, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %ci_greater_than_or_equal_unsigned = cmpi greater_than_or_equal %a, %b, unsigned : tile<16xi32> -> tile<16xi1>
    %e11 = exti %ci_greater_than_or_equal_unsigned unsigned : tile<16xi1> -> tile<16xi32>
    %o11 = reshape %e11 : tile<16xi32> -> tile<1x16xi32>
    %k11 = constant <i32: 11> : tile<i32>
    %w11 = store_view_tko weak %o11, %po[%k11, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_equal_ordered = cmpf equal ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e12 = exti %cf_equal_ordered unsigned : tile<16xi1> -> tile<16xi32>
    %o12 = reshape %e12 : tile<16xi32> -> tile<1x16xi32>
    %k12 = constant <i32: 12> : tile<i32>
    %w12 = store_view_tko weak %o12, %po[%k12, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_equal_unordered = cmpf equal unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e13 = exti %cf_equal_unordered unsigned : tile<16xi1> -> tile<16xi32>
    %o13 = reshape %e13 : tile<16xi32> -> tile<1x16xi32>
    %k13 = constant <i32: 13> : tile<i32>
    %w13 = store_view_tko weak %o13, %po[%k13, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_not_equal_ordered = cmpf not_equal ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e14 = exti %cf_not_equal_ordered unsigned : tile<16xi1> -> tile<16xi32>
    %o14 = reshape %e14 : tile<16xi32> -> tile<1x16xi32>
    %k14 = constant <i32: 14> : tile<i32>
    %w14 = store_view_tko weak %o14, %po[%k14, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_not_equal_unordered = cmpf not_equal unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e15 = exti %cf_not_equal_unordered unsigned : tile<16xi1> -> tile<16xi32>
    %o15 = reshape %e15 : tile<16xi32> -> tile<1x16xi32>
    %k15 = constant <i32: 15> : tile<i32>
    %w15 = store_view_tko weak %o15, %po[%k15, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_less_than_ordered = cmpf less_than ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e16 = exti %cf_less_than_ordered unsigned : tile<16xi1> -> tile<16xi32>
    %o16 = reshape %e16 : tile<16xi32> -> tile<1x16xi32>
    %k16 = constant <i32: 16> : tile<i32>
    %w16 = store_view_tko weak %o16, %po[%k16, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_less_than_unordered = cmpf less_than unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e17 = exti %cf_less_than_unordered unsigned : tile<16xi1> -> tile<16xi32>
    %o17 = reshape %e17 : tile<16xi32> -> tile<1x16xi32>
    %k17 = constant <i32: 17> : tile<i32>
    %w17 = store_view_tko weak %o17, %po[%k17, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_less_than_or_equal_ordered = cmpf less_than_or_equal ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e18 = exti %cf_less_than_or_equal_ordered unsigned : tile<16xi1> -> tile<16xi32>
    %o18 = reshape %e18 : tile<16xi32> -> tile<1x16xi32>
    %k18 = constant <i32: 18> : tile<i32>
    %w18 = store_view_tko weak %o18, %po[%k18, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_less_than_or_equal_unordered = cmpf less_than_or_equal unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e19 = exti %cf_less_than_or_equal_unordered unsigned : tile<16xi1> -> tile<16xi32>
    %o19 = reshape %e19 : tile<16xi32> -> tile<1x16xi32>
    %k19 = constant <i32: 19> : tile<i32>
    %w19 = store_view_tko weak %o19, %po[%k19, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_greater_than_ordered = cmpf greater_than ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e20 = exti %cf_greater_than_ordered unsigned : tile<16xi1> -> tile<16xi32>
    %o20 = reshape %e20 : tile<16xi32> -> tile<1x16xi32>
    %k20 = constant <i32: 20> : tile<i32>
    %w20 = store_view_tko weak %o20, %po[%k20, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_greater_than_unordered = cmpf greater_than unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e21 = exti %cf_greater_than_unordered unsigned : tile<16xi1> -> tile<16xi32>
    %o21 = reshape %e21 : tile<16xi32> -> tile<1x16xi32>
    %k21 = constant <i32: 21> : tile<i32>
    %w21 = store_view_tko weak %o21, %po[%k21, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_greater_than_or_equal_ordered = cmpf greater_than_or_equal ordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e22 = exti %cf_greater_than_or_equal_ordered unsigned : tile<16xi1> -> tile<16xi32>
    %o22 = reshape %e22 : tile<16xi32> -> tile<1x16xi32>
    %k22 = constant <i32: 22> : tile<i32>
    %w22 = store_view_tko weak %o22, %po[%k22, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %cf_greater_than_or_equal_unordered = cmpf greater_than_or_equal unordered %x, %y : tile<16xf32> -> tile<16xi1>
    %e23 = exti %cf_greater_than_or_equal_unordered unsigned : tile<16xi1> -> tile<16xi32>
    %o23 = reshape %e23 : tile<16xi32> -> tile<1x16xi32>
    %k23 = constant <i32: 23> : tile<i32>
    %w23 = store_view_tko weak %o23, %po[%k23, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %dv_zero = divi %a, %b1 signed rounding<zero> : tile<16xi32>
    %o24 = reshape %dv_zero : tile<16xi32> -> tile<1x16xi32>
    %k24 = constant <i32: 24> : tile<i32>
    %w24 = store_view_tko weak %o24, %po[%k24, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %dv_positive_inf = divi %a, %b1 signed rounding<positive_inf> : tile<16xi32>
    %o25 = reshape %dv_positive_inf : tile<16xi32> -> tile<1x16xi32>
    %k25 = constant <i32: 25> : tile<i32>
    %w25 = store_view_tko weak %o25, %po[%k25, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %dv_negative_inf = divi %a, %b1 signed rounding<negative_inf> : tile<16xi32>
    %o26 = reshape %dv_negative_inf : tile<16xi32> -> tile<1x16xi32>
    %k26 = constant <i32: 26> : tile<i32>
    %w26 = store_view_tko weak %o26, %po[%k26, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %du = divi %a, %b1 unsigned : tile<16xi32>
    %o27 = reshape %du : tile<16xi32> -> tile<1x16xi32>
    %k27 = constant <i32: 27> : tile<i32>
    %w27 = store_view_tko weak %o27, %po[%k27, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %du2 = divi %a, %b1 unsigned rounding<positive_inf> : tile<16xi32>
    %o28 = reshape %du2 : tile<16xi32> -> tile<1x16xi32>
    %k28 = constant <i32: 28> : tile<i32>
    %w28 = store_view_tko weak %o28, %po[%k28, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %maxi_signed = maxi %a, %b1 signed : tile<16xi32>
    %o29 = reshape %maxi_signed : tile<16xi32> -> tile<1x16xi32>
    %k29 = constant <i32: 29> : tile<i32>
    %w29 = store_view_tko weak %o29, %po[%k29, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %mini_signed = mini %a, %b1 signed : tile<16xi32>
    %o30 = reshape %mini_signed : tile<16xi32> -> tile<1x16xi32>
    %k30 = constant <i32: 30> : tile<i32>
    %w30 = store_view_tko weak %o30, %po[%k30, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %remi_signed = remi %a, %b1 signed : tile<16xi32>
    %o31 = reshape %remi_signed : tile<16xi32> -> tile<1x16xi32>
    %k31 = constant <i32: 31> : tile<i32>
    %w31 = store_view_tko weak %o31, %po[%k31, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %maxi_unsigned = maxi %a, %b1 unsigned : tile<16xi32>
    %o32 = reshape %maxi_unsigned : tile<16xi32> -> tile<1x16xi32>
    %k32 = constant <i32: 32> : tile<i32>
    %w32 = store_view_tko weak %o32, %po[%k32, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %mini_unsigned = mini %a, %b1 unsigned : tile<16xi32>
    %o33 = reshape %mini_unsigned : tile<16xi32> -> tile<1x16xi32>
    %k33 = constant <i32: 33> : tile<i32>
    %w33 = store_view_tko weak %o33, %po[%k33, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
    %remi_unsigned = remi %a, %b1 unsigned : tile<16xi32>
    %o34 = reshape %remi_unsigned : tile<16xi32> -> tile<1x16xi32>
    %k34 = constant <i32: 34> : tile<i32>
    %w34 = store_view_tko weak %o34, %po[%k34, %bid] : tile<1x16xi32>, partition_view<tile=(1x16), tensor_view<35x?xi32, strides=[?,1]>>, tile<i32> -> token
  }
}
