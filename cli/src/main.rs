fn main() {
    println!("fusionraid");
}
