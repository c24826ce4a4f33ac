// The JVM harness of benchmarks/camera_frames.py and tests/integration/test_camera_input.py: runs the
// generated FrameSampler (TaskSupport.kt of an image task, package mg.cam) on frames written by Python.
// Commands, one per line of args[0] (CROP: "-" or left,top,right,bottom; FILTER: ANTIALIAS | BILINEAR):
//   rgba FILE W H ROWSTRIDE PIXSTRIDE ROT CROP SHORTER CH CW FILTER        -> hex of the sampled tensor
//   argb FILE W H OFFSET STRIDE ROT CROP SHORTER CH CW FILTER              -> the same (FILE: little-endian int32)
//   yuv YFILE UVFILE UOFF VOFF W H YROW YPIX UVROW UVPIX ROT CROP SHORTER CH CW FILTER -> the same
//   bench N <one of the lines above>  -> "after" and "before": ms/frame and bytes allocated/frame in steady
//                                        state (N frames after 3 warm-up frames), and whether both agree
package mg.cam

import java.io.File
import java.lang.management.ManagementFactory
import java.nio.ByteBuffer
import java.nio.ByteOrder

fun hex(b: ByteBuffer, n: Int): String {
    val sb = StringBuilder(2 * n)
    for (i in 0 until n) sb.append("%02x".format(b.get(i).toInt() and 0xFF))
    return sb.toString()
}

fun direct(file: String): ByteBuffer {
    val bytes = File(file).readBytes()
    return ByteBuffer.allocateDirect(bytes.size).put(bytes).also { it.clear() }
}

fun interface PixelAt {
    fun at(x: Int, y: Int): Int
}

fun clamp(z: Int): Int = if (z < 0) 0 else if (z > 255) 255 else z

fun crop(s: String): CropRect? = if (s == "-") null else s.split(",").map { it.toInt() }.let { CropRect(it[0], it[1], it[2], it[3]) }

val samplers = HashMap<String, FrameSampler>()

fun sampler(shorter: String, ch: String, cw: String, filter: String): FrameSampler =
    samplers.getOrPut("$shorter $ch $cw $filter") { FrameSampler(shorter.toInt(), ch.toInt(), cw.toInt(), ResizeFilter.valueOf(filter)) }

// A parsed command: the fused call ("after"), and the full-frame pipeline an app needed before ("before":
// the frame converted to a tight ARGB IntArray, as ImageProxy.toBitmap() + Bitmap.getPixels give it, then
// rotated and cropped into another IntArray, then ImageInput.prepare, which converts it to RGB bytes again).
class Job(val after: () -> ByteBuffer, val before: () -> ByteArray, val size: Int)

fun job(p: List<String>): Job {
    val fmt = p[0]
    val restAt = if (fmt == "yuv") 11 else 6
    val rot = p[restAt].toInt()
    val c = crop(p[restAt + 1])
    val s = sampler(p[restAt + 2], p[restAt + 3], p[restAt + 4], p[restAt + 5])
    val w: Int
    val h: Int
    val pixel: PixelAt
    val after: () -> ByteBuffer
    when (fmt) {
        "rgba" -> {
            val buf = direct(p[1]); w = p[2].toInt(); h = p[3].toInt()
            val rs = p[4].toInt(); val ps = p[5].toInt()
            pixel = PixelAt { x, y -> val a = y * rs + x * ps; ((buf.get(a).toInt() and 0xFF) shl 16) or ((buf.get(a + 1).toInt() and 0xFF) shl 8) or (buf.get(a + 2).toInt() and 0xFF) }
            after = { s.rgba(buf, w, h, rs, ps, rot, c) }
        }
        "argb" -> {
            val bb = File(p[1]).readBytes().let { ByteBuffer.wrap(it).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer() }
            val ints = IntArray(bb.remaining()).also { bb.get(it) }
            w = p[2].toInt(); h = p[3].toInt()
            val off = p[4].toInt(); val st = p[5].toInt()
            pixel = PixelAt { x, y -> ints[off + y * st + x] and 0xFFFFFF }
            after = { s.argb(ints, w, h, off, st, rot, c) }
        }
        else -> {
            val yb = direct(p[1]); val uv = direct(p[2])
            val u = uv.duplicate().also { it.position(p[3].toInt()) }.slice()
            val v = uv.duplicate().also { it.position(p[4].toInt()) }.slice()
            w = p[5].toInt(); h = p[6].toInt()
            val yr = p[7].toInt(); val yp = p[8].toInt(); val cr = p[9].toInt(); val cp = p[10].toInt()
            pixel = PixelAt { x, y ->
                val l = yb.get(y * yr + x * yp).toInt() and 0xFF
                val c = (y shr 1) * cr + (x shr 1) * cp
                val cu = (u.get(c).toInt() and 0xFF) - 128
                val cv = (v.get(c).toInt() and 0xFF) - 128
                (clamp(l + ((91881 * cv + 32768) shr 16)) shl 16) or (clamp(l + ((-22554 * cu - 46802 * cv + 32768) shr 16)) shl 8) or
                    clamp(l + ((116130 * cu + 32768) shr 16))
            }
            after = { s.yuv(yb, u, v, w, h, yr, yp, cr, cp, rot, c) }
        }
    }
    val before = {
        val argb = IntArray(w * h)
        for (y in 0 until h) for (x in 0 until w) argb[y * w + x] = pixel.at(x, y)
        val cx = c?.left ?: 0; val cy = c?.top ?: 0; val cw = c?.width ?: w; val ch = c?.height ?: h
        val up = rot == 0 || rot == 180
        val ow = if (up) cw else ch
        val oh = if (up) ch else cw
        val upright = IntArray(ow * oh)
        for (r in 0 until oh) for (x in 0 until ow) {
            val sx = when (rot) { 0 -> cx + x; 90 -> cx + r; 180 -> cx + cw - 1 - x; else -> cx + cw - 1 - r }
            val sy = when (rot) { 0 -> cy + r; 90 -> cy + ch - 1 - x; 180 -> cy + ch - 1 - r; else -> cy + x }
            upright[r * ow + x] = argb[sy * w + sx]
        }
        ImageInput.resizeCrop(ImageInput.fromArgb(upright, ow, oh), s.shorter, s.cropHeight, s.cropWidth, s.filter).pixels
    }
    return Job(after, before, s.cropHeight * s.cropWidth * 3)
}

fun measure(n: Int, block: () -> Any): Pair<Double, Double> {
    val mx = ManagementFactory.getThreadMXBean() as com.sun.management.ThreadMXBean
    val id = Thread.currentThread().id
    repeat(3) { block() }
    val a0 = mx.getThreadAllocatedBytes(id)
    val t0 = System.nanoTime()
    repeat(n) { block() }
    val t1 = System.nanoTime()
    val a1 = mx.getThreadAllocatedBytes(id)
    return Pair((t1 - t0) / 1e6 / n, (a1 - a0).toDouble() / n)
}

fun main(args: Array<String>) {
    for (line in File(args[0]).readLines()) {
        if (line.isBlank()) continue
        val p = line.split(" ")
        if (p[0] == "bench") {
            val j = job(p.subList(2, p.size))
            val n = p[1].toInt()
            val out = j.after()
            val same = j.before().withIndex().all { (i, b) -> out.get(i) == b }
            // Three rounds, after and before interleaved; the fastest round of each (the machine may be shared).
            var ta = Double.MAX_VALUE
            var ba = 0.0
            var tb = Double.MAX_VALUE
            var bb = 0.0
            repeat(3) {
                val a = measure(n) { j.after() }
                val b = measure(maxOf(1, n / 4)) { j.before() }
                if (a.first < ta) { ta = a.first; ba = a.second }
                if (b.first < tb) { tb = b.first; bb = b.second }
            }
            println("after_ms=%.3f after_bytes=%.0f before_ms=%.3f before_bytes=%.0f same=%b".format(ta, ba, tb, bb, same))
        } else {
            val j = job(p)
            println(hex(j.after(), j.size))
        }
    }
}
