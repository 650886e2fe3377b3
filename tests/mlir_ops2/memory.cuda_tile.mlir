// memory ops in forms cuTile does not write: masked pointer loads with a padding tile, masked stores,
// atomics with every scope / ordering and mask, a view reduction, fences and joined tokens, i1 and i64
// elements, get_tensor_shape, integer <-> pointer casts, gather / strided views
cuda_tile.module @memory {
  entry @memory(%x: tile<ptr<i32>>, %n: tile<i32>, %acc: tile<ptr<i32>>, %flags: tile<ptr<i1>>, %wide: tile<ptr<i64>>,
                %shape: tile<ptr<i32>>) {
    %t0 = make_token : token
    %bid, %by, %bz = get_tile_block_id : tile<i32>
    %c16 = constant <i32: 16> : tile<i32>
    %base = muli %bid, %c16 : tile<i32>
    %io = iota : tile<16xi32>
    %b16_1 = reshape %base : tile<i32> -> tile<1xi32>
    %b16 = broadcast %b16_1 : tile<1xi32> -> tile<16xi32>
    %ix = addi %io, %b16 : tile<16xi32>
    %nb_1 = reshape %n : tile<i32> -> tile<1xi32>
    %nb = broadcast %nb_1 : tile<1xi32> -> tile<16xi32>
    %in = cmpi less_than %ix, %nb, signed : tile<16xi32> -> tile<16xi1>
    // x through an integer address: ptr_to_int, add 4 * index, int_to_ptr
    %xi = ptr_to_int %x : tile<ptr<i32>> -> tile<i64>
    %xb_1 = reshape %xi : tile<i64> -> tile<1xi64>
    %xb = broadcast %xb_1 : tile<1xi64> -> tile<16xi64>
    %ix64 = exti %ix signed : tile<16xi32> -> tile<16xi64>
    %four = constant <i64: 4> : tile<16xi64>
    %off = muli %ix64, %four : tile<16xi64>
    %addr = addi %xb, %off : tile<16xi64>
    %px = int_to_ptr %addr : tile<16xi64> -> tile<16xptr<i32>>
    %pad = constant <i32: -7> : tile<16xi32>
    %v, %tv = load_ptr_tko weak %px, %in, %pad token = %t0 : tile<16xptr<i32>>, tile<16xi1>, tile<16xi32> -> tile<16xi32>, token
    // atomics into acc[0..5]: add (masked), max, umin, or, xor, xchg of the last lane via a 0-d pointer
    %a1_1 = reshape %acc : tile<ptr<i32>> -> tile<1xptr<i32>>
    %a1 = broadcast %a1_1 : tile<1xptr<i32>> -> tile<16xptr<i32>>
    %zero = constant <i32: 0> : tile<16xi32>
    %p0 = offset %a1, %zero : tile<16xptr<i32>>, tile<16xi32> -> tile<16xptr<i32>>
    %r0, %k0 = atomic_rmw_tko relaxed device %p0, add, %v, %in token = %tv : tile<16xptr<i32>>, tile<16xi32>, tile<16xi1> -> tile<16xi32>, token
    %one = constant <i32: 1> : tile<16xi32>
    %p1 = offset %a1, %one : tile<16xptr<i32>>, tile<16xi32> -> tile<16xptr<i32>>
    %r1, %k1 = atomic_rmw_tko acq_rel sys %p1, max, %v, %in : tile<16xptr<i32>>, tile<16xi32>, tile<16xi1> -> tile<16xi32>, token
    %two = constant <i32: 2> : tile<16xi32>
    %p2 = offset %a1, %two : tile<16xptr<i32>>, tile<16xi32> -> tile<16xptr<i32>>
    %r2, %k2 = atomic_rmw_tko release tl_blk %p2, umin, %v, %in : tile<16xptr<i32>>, tile<16xi32>, tile<16xi1> -> tile<16xi32>, token
    %three = constant <i32: 3> : tile<16xi32>
    %p3 = offset %a1, %three : tile<16xptr<i32>>, tile<16xi32> -> tile<16xptr<i32>>
    %r3, %k3 = atomic_rmw_tko acquire device %p3, or, %v, %in : tile<16xptr<i32>>, tile<16xi32>, tile<16xi1> -> tile<16xi32>, token
    %fv = constant <i32: 4> : tile<16xi32>
    %p4 = offset %a1, %fv : tile<16xptr<i32>>, tile<16xi32> -> tile<16xptr<i32>>
    %r4, %k4 = atomic_rmw_tko relaxed device %p4, xor, %v, %in : tile<16xptr<i32>>, tile<16xi32>, tile<16xi1> -> tile<16xi32>, token
    // compare-and-swap on acc[5]: 0 -> 1 succeeds for exactly one lane of one block
    %five = constant <i32: 5> : tile<i32>
    %p5 = offset %acc, %five : tile<ptr<i32>>, tile<i32> -> tile<ptr<i32>>
    %z0 = constant <i32: 0> : tile<i32>
    %o1 = constant <i32: 1> : tile<i32>
    %r5, %k5 = atomic_cas_tko acq_rel device %p5, %z0, %o1 : tile<ptr<i32>>, tile<i32> -> tile<i32>, token
    %tj = join_tokens %k0, %k1, %k2, %k3, %k4, %k5 : token
    %tf = memory_fence_alias_tko %tj
    // the view reduction: acc[6 + 0] += sum of the block's elements through an atomic_red_view_tko
    %av = make_tensor_view %acc, shape = [8], strides = [1] : tensor_view<8xi32, strides=[1]>
    %ap = make_partition_view %av : partition_view<tile=(1), tensor_view<8xi32, strides=[1]>>
    %sum = reduce %v dim=0 identities=[0 : i32] : tile<16xi32> -> tile<i32>
    (%l: tile<i32>, %r: tile<i32>) {
      %s = addi %l, %r : tile<i32>
      yield %s : tile<i32>
    }
    %inpad = cmpi not_equal %v, %pad, signed : tile<16xi32> -> tile<16xi1>
    %bad = constant <i32: 0> : tile<16xi32>
    %vv = select %inpad, %v, %bad : tile<16xi1>, tile<16xi32>
    %sum2 = reduce %vv dim=0 identities=[0 : i32] : tile<16xi32> -> tile<i32>
    (%l: tile<i32>, %r: tile<i32>) {
      %s = addi %l, %r : tile<i32>
      yield %s : tile<i32>
    }
    %s1 = reshape %sum2 : tile<i32> -> tile<1xi32>
    %six = constant <i32: 6> : tile<i32>
    %kr = atomic_red_view_tko relaxed device %ap[%six], add, %s1 token = %tf : tile<1xi32>, partition_view<tile=(1), tensor_view<8xi32, strides=[1]>>, tile<i32> -> token
    // flags[i] = x[i] > 0 (i1 elements), masked store
    %fz = constant <i32: 0> : tile<16xi32>
    %pos = cmpi greater_than %v, %fz, signed : tile<16xi32> -> tile<16xi1>
    %fl_1 = reshape %flags : tile<ptr<i1>> -> tile<1xptr<i1>>
    %fl = broadcast %fl_1 : tile<1xptr<i1>> -> tile<16xptr<i1>>
    %fp = offset %fl, %ix : tile<16xptr<i1>>, tile<16xi32> -> tile<16xptr<i1>>
    %kf = store_ptr_tko weak %fp, %pos, %in : tile<16xptr<i1>>, tile<16xi1>, tile<16xi1> -> token
    // wide[i] = x[i] * 2^33 (i64 elements) through a view with i64 shape
    %n64 = exti %n signed : tile<i32> -> tile<i64>
    %wv = make_tensor_view %wide, shape = [%n64], strides = [1] : tile<i64> -> tensor_view<?xi64, strides=[1]>
    %wp = make_partition_view %wv : partition_view<tile=(16), tensor_view<?xi64, strides=[1]>>
    %v64 = exti %v signed : tile<16xi32> -> tile<16xi64>
    %sh = constant <i64: 33> : tile<16xi64>
    %w64 = shli %v64, %sh : tile<16xi64>
    %kw = store_view_tko weak %w64, %wp[%bid] : tile<16xi64>, partition_view<tile=(16), tensor_view<?xi64, strides=[1]>>, tile<i32> -> token
    // the view's shape as the kernel sees it
    %d = get_tensor_shape %wv : tensor_view<?xi64, strides=[1]> -> tile<i32>
    %sp = offset %shape, %bid : tile<ptr<i32>>, tile<i32> -> tile<ptr<i32>>
    %ks = store_ptr_tko weak %sp, %d : tile<ptr<i32>>, tile<i32> -> token
  }
}
